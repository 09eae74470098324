// @ts-check
/**
 * How `npm start` and every `npm run <command>` start: `node scripts/launch.mjs TARGET [ARGS...]`.
 *
 * TARGET is a compiled entry point (`dist/...js`, run in this process as `node TARGET ARGS` would
 * run it) or a TypeScript file (`test/...ts`, run through tsx). The compiled code is brought up to
 * date first (`tsc -b tsconfig.build.json`, through TypeScript's solution builder) in a worker
 * thread, so TypeScript's memory is given back before the command runs, and while something is
 * being built this process says so on stderr (stdout stays the command's own: JSON log lines, a
 * token). Nothing is printed when everything is up to date.
 *
 * `--help` never waits for a build: with `-h`/`--help` among the arguments, a command already
 * built (or a TypeScript one) runs at once; only a fresh clone, with no dist/ yet, builds first.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';

const PROJECT = 'tsconfig.build.json';
/** How often a long build says it is still at work. */
const STILL_BUILDING_EVERY_MS = 15_000;

if (isMainThread) await launch(process.argv.slice(2));
else buildInWorker();

/** @param {string[]} argv */
async function launch([target, ...args]) {
  if (target === undefined) {
    process.stderr.write('launch: usage: node scripts/launch.mjs TARGET [ARGS...]\n');
    process.exit(2);
  }
  const path = resolve(target);
  const typescriptEntry = path.endsWith('.ts');
  const wantsHelp = args.some((arg) => arg === '--help' || arg === '-h');
  if (!(wantsHelp && (typescriptEntry || existsSync(path)))) await build();
  if (typescriptEntry) {
    const { register } = await import('tsx/esm/api');
    register();
  }
  // As `node TARGET ARGS` would see them: the commands read their arguments from process.argv.
  process.argv = [process.argv[0] ?? process.execPath, path, ...args];
  await import(pathToFileURL(path).href);
}

/** Builds what is out of date, saying what while it does; exits 1 when the sources do not compile. */
function build() {
  const started = Date.now();
  const seconds = () => Math.round((Date.now() - started) / 1000);
  /** @type {string | undefined} */
  let building;
  const ticker = setInterval(() => {
    if (building) say(`still building ${building} (${seconds()} s so far)…`);
  }, STILL_BUILDING_EVERY_MS);
  return new Promise((resolveBuild) => {
    const worker = new Worker(new URL(import.meta.url), { workerData: { pretty: Boolean(process.stderr.isTTY) } });
    worker.on('message', (/** @type {{ output?: string, building?: string, built?: { errors: number } }} */ message) => {
      if (message.output !== undefined) process.stderr.write(message.output);
      if (message.building !== undefined) {
        if (building === undefined)
          say('compiling the TypeScript sources into dist/ (tsc -b); after a fresh clone this takes a minute or two');
        building = message.building;
        say(`building ${building}…`);
      }
      if (message.built === undefined) return;
      clearInterval(ticker);
      if (message.built.errors > 0) {
        say(`the build failed with ${message.built.errors} error(s), shown above; fix them, or run npm run build to see them again`);
        process.exit(1);
      }
      if (building !== undefined) say(`built in ${seconds()} s; starting`);
      resolveBuild(undefined);
    });
    worker.on('error', (error) => {
      clearInterval(ticker);
      say(`the build could not run: ${error.message}`);
      process.exit(1);
    });
  });
}

/** @param {string} line */
function say(line) {
  process.stderr.write(`build: ${line}\n`);
}

/** The worker: `tsc -b PROJECT`, one project at a time, telling the main thread which. */
async function buildInWorker() {
  const port = /** @type {import('node:worker_threads').MessagePort} */ (parentPort);
  const { default: ts } = await import('typescript');
  let errors = 0;
  // What TypeScript prints (its diagnostics) goes to stderr, through the main thread in order with
  // the rest: stdout is the command's.
  /** @type {import('typescript').System} */
  const system = { ...ts.sys, write: (output) => port.postMessage({ output }) };
  const reportDiagnostic = ts.createDiagnosticReporter(system, Boolean(workerData?.pretty));
  const host = ts.createSolutionBuilderHost(system, undefined, (diagnostic) => {
    if (diagnostic.category === ts.DiagnosticCategory.Error) errors++;
    reportDiagnostic(diagnostic);
  });
  const builder = ts.createSolutionBuilder(host, [PROJECT], {});
  for (let project = builder.getNextInvalidatedProject(); project; project = builder.getNextInvalidatedProject()) {
    if (project.kind === ts.InvalidatedProjectKind.Build) {
      port.postMessage({ building: relativeToCwd(project.project).replace(/\/?tsconfig\.build\.json$/, '') || 'src' });
    }
    project.done();
  }
  port.postMessage({ built: { errors } });
}

/** @param {string} path */
function relativeToCwd(path) {
  const cwd = `${process.cwd()}/`;
  return path.startsWith(cwd) ? path.slice(cwd.length) : path;
}
