/**
 * A connection string's parts. Not a WHATWG URL: a replica set's lists several hosts
 * (`mongodb://a:27017,b:27017/chat?replicaSet=rs0`), which `new URL` refuses.
 */
export interface MongodbUriParts {
  /** `mongodb://` or `mongodb+srv://`. */
  scheme: string;
  /** `user:password@`, or '' without credentials. */
  credentials: string;
  /** One host or several, comma-separated, with their ports. */
  hosts: string;
  /** The database named in the path, '' when none. */
  database: string;
  /** The options, in their order and spelling. */
  options: URLSearchParams;
}

const URI = /^(mongodb(?:\+srv)?:\/\/)([^@/?]*@)?([^/?]*)(?:\/([^?]*))?(?:\?(.*))?$/;

export function mongodbUriParts(uri: string): MongodbUriParts {
  const match = URI.exec(uri);
  if (match === null) throw new Error('not a mongodb:// or mongodb+srv:// connection string');
  const [, scheme, credentials = '', hosts, database = '', query = ''] = match;
  return { scheme: scheme!, credentials, hosts: hosts!, database, options: new URLSearchParams(query) };
}

export function mongodbUri({ scheme, credentials, hosts, database, options }: MongodbUriParts): string {
  const query = options.toString();
  return `${scheme}${credentials}${hosts}/${database}${query === '' ? '' : `?${query}`}`;
}

/** The same connection string, naming database `name` (options in the query string are kept). */
export function withDatabaseName(uri: string, name: string): string {
  return mongodbUri({ ...mongodbUriParts(uri), database: name });
}

/** The value of an option of the connection string; option names are case-insensitive, as the driver reads them. */
export function uriOption(uri: string, name: string): string | undefined {
  const wanted = name.toLowerCase();
  for (const [key, value] of mongodbUriParts(uri).options) if (key.toLowerCase() === wanted) return value;
  return undefined;
}

/** The connection string as a banner shows it: without credentials or options. */
export function describeMongodbUri(uri: string): string {
  return uri.replace(/^(mongodb(?:\+srv)?:\/\/)[^@/]*@/, '$1').replace(/\?.*$/, '');
}
