import { type NodeProcess, spawnNode } from './node-process.js';

export interface EmbeddedDbProcess {
  /** e.g. mongodb://127.0.0.1:PORT/?directConnection=true */
  uri: string;
  port: number;
  /** Kills the engine as a crash would (SIGKILL): connections drop, data is gone. */
  crash(): Promise<void>;
  /** Starts a fresh engine on the same port. */
  restart(): Promise<void>;
  /** Freezes (SIGSTOP) or thaws (SIGCONT) it: connections stay open but nothing answers. */
  pause(): void;
  resume(): void;
  stop(): Promise<void>;
}

/**
 * `node dist/cli/embedded-db.js` as its own process, which a test can crash, restart and freeze:
 * a single-member replica set, or a standalone server with `standalone`; with MongoDB's test
 * commands (`configureFailPoint`) when `enableTestCommands`.
 */
export async function startEmbeddedDbProcess(
  options: { standalone?: boolean; enableTestCommands?: boolean } = {},
): Promise<EmbeddedDbProcess> {
  const flags = [...(options.standalone ? ['--standalone'] : []), ...(options.enableTestCommands ? ['--enable-test-commands'] : [])];
  const launch = (port: number) => launchOn(port, flags);
  let current = await launch(0);
  const port = Number(new URL(current.uri).port);
  const kill = async (signal: NodeJS.Signals) => {
    if (current.process.child.exitCode === null && current.process.child.signalCode === null) {
      current.process.child.kill(signal);
      await current.process.exited;
    }
  };
  return {
    uri: current.uri,
    port,
    crash: () => kill('SIGKILL'),
    async restart() {
      current = await launch(port);
    },
    pause: () => current.process.child.kill('SIGSTOP'),
    resume: () => current.process.child.kill('SIGCONT'),
    async stop() {
      current.process.child.kill('SIGCONT');
      await kill('SIGTERM');
    },
  };
}

async function launchOn(port: number, flags: string[]): Promise<{ process: NodeProcess; uri: string }> {
  const engine = spawnNode('dist/cli/embedded-db.js', ['--port', String(port), ...flags]);
  const [uri] = await engine.waitFor(/mongodb:\/\/127\.0\.0\.1:\d+\/\S*/);
  return { process: engine, uri };
}
