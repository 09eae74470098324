import { PassThrough } from 'node:stream';

import { describe, expect, it } from 'vitest';

import { ErrorFormat } from '../../../src/operations/format.js';
import { type ConnectionEnds, isBehindLiveStream, LiveConnections } from '../../../src/operations/live-connections.js';
import { ManualClock } from '../../support/clock.js';

const ENDS: ConnectionEnds = { expired: () => {}, stopping: () => {}, cut: () => {} };

function connections() {
  return new LiveConnections({ perCaller: 10, perAddress: 10 }, new ManualClock(0), new ErrorFormat(true));
}

describe('a live connection watching its socket', () => {
  it('ends when the socket closes, and leaves the socket with no listener of its own', async () => {
    const socket = new PassThrough();
    const closeListeners = socket.listenerCount('close');
    const connection = connections().connect('sse', '127.0.0.1', ENDS, { socket });
    expect(isBehindLiveStream(socket)).toBe(true);
    expect(socket.listenerCount('close')).toBe(closeListeners + 1);
    socket.destroy();
    await connection.closed;
    expect(connection.isOpen).toBe(false);
    expect(isBehindLiveStream(socket)).toBe(false);
    expect(socket.listenerCount('close')).toBe(closeListeners);
  });

  it('lets go of its socket when it ends first: the socket carries no live stream, and its close ends nothing', async () => {
    const live = connections();
    const socket = new PassThrough();
    const first = live.connect('sse', '127.0.0.1', ENDS, { socket });
    first.end();
    expect(isBehindLiveStream(socket)).toBe(false);
    expect(socket.listenerCount('close')).toBe(0);
    // The socket carries the next connection on its own.
    const next = live.connect('sse', '127.0.0.1', ENDS, { socket });
    expect(isBehindLiveStream(socket)).toBe(true);
    socket.destroy();
    await next.closed;
    expect(next.isOpen).toBe(false);
  });

  it('watches one socket: watching another lets go of the first', async () => {
    const [first, second] = [new PassThrough(), new PassThrough()];
    const connection = connections().connect('sse', '127.0.0.1', ENDS, { socket: first });
    connection.watch(second);
    expect(isBehindLiveStream(first)).toBe(false);
    expect(first.listenerCount('close')).toBe(0);
    first.destroy();
    await new Promise((resolve) => first.once('close', resolve));
    expect(connection.isOpen).toBe(true);
    second.destroy();
    await connection.closed;
    expect(isBehindLiveStream(second)).toBe(false);
  });

  it('ends at once on a socket that has closed already', () => {
    const socket = new PassThrough();
    socket.destroy();
    const connection = connections().connect('sse', '127.0.0.1', ENDS, { socket });
    expect(connection.isOpen).toBe(false);
    expect(isBehindLiveStream(socket)).toBe(false);
  });
});
