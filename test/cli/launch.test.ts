import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * `scripts/launch.mjs`, which `npm start` and every `npm run <command>` go through, on a project
 * of its own in a scratch directory (one TypeScript file, as src/ and dist/ are laid out here), so
 * that what it builds and when can be watched without touching this project's dist/.
 */
const LAUNCH = 'scripts/launch.mjs';

/** A command that prints a usage line on --help, else its arguments; built from src/cli/hello.ts to dist/cli/hello.js. */
const command = (greeting: string) => `declare const process: { argv: string[]; stdout: { write(text: string): void } };
const args = process.argv.slice(2);
process.stdout.write(args.includes('--help') ? 'Usage: hello\\n' : \`${greeting} \${args.join(' ')}\\n\`);
export {};
`;

let project: string;
const source = () => join(project, 'src/cli/hello.ts');
const built = () => join(project, 'dist/cli/hello.js');
/** Each step may build: TypeScript takes seconds even for one file, more on a busy machine. */
const BUILD_MS = 120_000;

/** `node scripts/launch.mjs dist/cli/hello.js ARGS` in the scratch project, as `npm run hello -- ARGS` would run it. */
async function launch(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const run = promisify(execFile)(process.execPath, [resolve(LAUNCH), 'dist/cli/hello.js', ...args], {
      env: { PATH: process.env.PATH ?? '' },
      cwd: project,
      timeout: BUILD_MS - 10_000,
    });
    const { stdout, stderr } = await run;
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

// One project through its life, step by step (each test goes on from the one before).
describe('scripts/launch.mjs', () => {
  beforeAll(async () => {
    project = await mkdtemp(join(tmpdir(), 'launch-'));
    await mkdir(join(project, 'src/cli'), { recursive: true });
    await writeFile(join(project, 'package.json'), '{ "type": "module" }\n');
    await writeFile(
      join(project, 'tsconfig.build.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          strict: true,
          types: [],
          rootDir: 'src',
          outDir: 'dist',
          incremental: true,
          tsBuildInfoFile: 'dist/.tsbuildinfo',
        },
        include: ['src'],
      }),
    );
    await writeFile(source(), command('hello'));
  });
  afterAll(() => rm(project, { recursive: true, force: true }));

  it(
    'after a fresh clone builds first, even for --help, saying so on stderr while it does, then runs the command',
    async () => {
      const { code, stdout, stderr } = await launch(['--help']);
      expect(code).toBe(0);
      expect(stdout).toBe('Usage: hello\n');
      const lines = stderr.trimEnd().split('\n');
      expect(lines[0]).toMatch(/^build: compiling the TypeScript sources into dist\/ \(tsc -b\); after a fresh clone this takes a minute/);
      expect(lines[1]).toBe('build: building src…');
      expect(lines.at(-1)).toMatch(/^build: built in \d+ s; starting$/);
      for (const line of lines) expect(line).toMatch(/^build: /);
    },
    BUILD_MS,
  );

  it(
    'says nothing when everything is built, and passes the arguments on',
    async () => {
      expect(await launch(['world'])).toEqual({ code: 0, stdout: 'hello world\n', stderr: '' });
    },
    BUILD_MS,
  );

  it(
    'answers --help without building: the command as built runs at once, whatever the sources say',
    async () => {
      const before = (await stat(built())).mtimeMs;
      // Sources that do not even compile: a build would fail, and --help still answers.
      await writeFile(source(), 'const broken: number = "text";\nexport {};\n');
      expect(await launch(['--help'])).toEqual({ code: 0, stdout: 'Usage: hello\n', stderr: '' });
      expect((await stat(built())).mtimeMs).toBe(before);
    },
    BUILD_MS,
  );

  it(
    'stops with exit code 1 when the sources do not compile, showing the errors on stderr and running nothing',
    async () => {
      const { code, stdout, stderr } = await launch(['world']);
      expect(code).toBe(1);
      expect(stdout).toBe('');
      expect(stderr).toMatch(/src\/cli\/hello\.ts\(1,7\): error TS2322/);
      expect(stderr).toMatch(/^build: the build failed with 1 error\(s\), shown above/m);
    },
    BUILD_MS,
  );

  it(
    'builds again after a change to the sources, and runs what was built',
    async () => {
      await writeFile(source(), command('goodbye'));
      const { code, stdout, stderr } = await launch(['world']);
      expect(code).toBe(0);
      expect(stdout).toBe('goodbye world\n');
      expect(stderr).toContain('build: building src…');
    },
    BUILD_MS,
  );
});

describe('package.json', () => {
  it('starts every command that runs built code through the launcher, never after a bare tsc -b', async () => {
    const { scripts } = JSON.parse(await readFile('package.json', 'utf8')) as { scripts: Record<string, string> };
    const commands = ['start', 'seed', 'embedded-db', 'token', 'sso-stub', 'sidecar', 'purchases', 'import', 'bench', 'conformance'];
    for (const name of commands) expect(scripts[name], name).toMatch(/^exec node scripts\/launch\.mjs \S+$/);
    for (const [name, script] of Object.entries(scripts)) expect(script, name).not.toMatch(/tsc -b [^&]*&&/);
  });

  it('answers npm start -- --help and npm run token -- --help with the usage and exit code 0', async () => {
    const npm = (args: string[]) =>
      promisify(execFile)('npm', ['--silent', ...args], {
        env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '' },
        timeout: 60_000,
      });
    const [start, token] = await Promise.all([npm(['start', '--', '--help']), npm(['run', 'token', '--', '--help'])]);
    expect(start.stdout).toMatch(/^Usage: npm start/);
    expect(token.stdout).toMatch(/^Usage: npm run token/);
    expect(start.stderr + token.stderr).toBe('');
  });
});
