/** The same connection string, naming database `name` (options in the query string are kept). */
export function withDatabaseName(uri: string, name: string): string {
  const url = new URL(uri);
  url.pathname = `/${name}`;
  return url.toString();
}

/** The connection string as a banner shows it: without credentials or options. */
export function describeMongodbUri(uri: string): string {
  return uri.replace(/^(mongodb(?:\+srv)?:\/\/)[^@/]*@/, '$1').replace(/\?.*$/, '');
}
