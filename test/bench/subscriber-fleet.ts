import { connectAs, type Operation, type TestSocket } from '../support/websocket.js';
import { openInBatches } from './http-subscribers.js';

/**
 * One side's subscribers of the scale scenario's fan-out, in a process of their own: a process
 * may hold 20 000 file descriptors here, so the gateway's 10 000 sockets and the floor's can be
 * open at once only in two processes, and only then can the two sides' writes alternate.
 *
 * Started by `startFleet` (`scale.ts`) with an IPC channel; it answers each command once done.
 * A delay runs from the write's start to the event's arrival, both read on the one clock the
 * processes share (`performance.timeOrigin + performance.now()`).
 */
export type FleetCommand =
  | { open: { base: string; authorization: string; count: number; sockets: number; query: string } }
  | { collect: { startedAt: number } }
  | { close: true };
export type FleetAnswer = { opened: number } | { delays: number[] } | { closed: true } | { failed: string };

const REPLY_WITHIN_MS = 60_000;

const sockets: TestSocket[] = [];
const operations: Operation[] = [];

/** `count` subscriptions on `socketCount` sockets (the first few carry two when there are fewer sockets), each past its first event. */
async function open({ base, authorization, count, sockets: socketCount, query }: Extract<FleetCommand, { open: unknown }>['open']) {
  const opened: TestSocket[] = [];
  const connect = async () => {
    const socket = await connectAs(base, authorization).catch((error: unknown) => {
      throw new Error(`opening socket ${opened.length + 1} of ${socketCount} failed: ${String(error)}`);
    });
    sockets.push(socket);
    opened.push(socket);
    return socket.subscribe(query);
  };
  operations.push(...(await openInBatches(socketCount, connect)));
  for (let at = 0; operations.length < count; at++) operations.push(opened[at]!.subscribe(query));
  for (const operation of operations) await operation.next(REPLY_WITHIN_MS);
  return operations.length;
}

async function answer(command: FleetCommand): Promise<FleetAnswer> {
  if ('open' in command) return { opened: await open(command.open) };
  if ('collect' in command) {
    const arrivals = await Promise.all(operations.map((operation) => operation.nextTimed(REPLY_WITHIN_MS)));
    return { delays: arrivals.map(({ receivedAt }) => performance.timeOrigin + receivedAt - command.collect.startedAt) };
  }
  await Promise.all(sockets.splice(0).map((socket) => socket.close()));
  operations.length = 0;
  return { closed: true };
}

process.on('message', (command: FleetCommand) => {
  answer(command).then(
    (reply) => process.send!(reply),
    (error: unknown) => process.send!({ failed: error instanceof Error ? (error.stack ?? error.message) : String(error) }),
  );
});
// The parent went: nothing is left to measure.
process.on('disconnect', () => {
  for (const socket of sockets) socket.socket.terminate();
  process.exit(0);
});
