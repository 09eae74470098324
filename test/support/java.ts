import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/** The JDK's `java`, which runs a single source file without a build step (JDK 11 and later). */
const JAVA = 'java';
const CLIENT = fileURLToPath(new URL('java/JavaHttpClient.java', import.meta.url));
/** CI (which sets CI, as .ci/run does, and installs a JDK) must run the Java tests: there a missing JDK fails them. */
const required = Boolean(process.env.CI);

const hasJava = await promisify(execFile)(JAVA, ['-version']).then(
  () => true,
  () => false,
);

/** Whether `what` (a test with Java's HttpClient) is skipped here: only outside CI, and only without a JDK. Says so when it is. */
export function skipsJavaTest(what: string): boolean {
  const skipped = !hasJava && !required;
  if (skipped) console.warn(`no java on PATH: ${what} is skipped (apt-get install default-jdk-headless to run it).`);
  return skipped;
}

/** One request for `javaHttpClient`: method, path (with query) and body ('' for none). */
export type JavaRequest = [method: string, path: string, body: string];

/** Sends `requests` in turn with Java's own HttpClient, on its defaults; answers each status and body. */
export async function javaHttpClient(
  baseUrl: string,
  authorization: string,
  requests: JavaRequest[],
): Promise<{ status: number; body: string }[]> {
  if (!hasJava) throw new Error('no java on PATH, and CI must run the Java tests: apt-get install default-jdk-headless');
  const { stdout } = await promisify(execFile)(JAVA, [CLIENT, baseUrl, authorization, ...requests.flat()], { timeout: 60_000 });
  return stdout
    .trimEnd()
    .split('\n')
    .map((line) => ({ status: Number(line.slice(0, line.indexOf('\t'))), body: line.slice(line.indexOf('\t') + 1) }));
}
