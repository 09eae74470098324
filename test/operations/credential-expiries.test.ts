import { describe, expect, it } from 'vitest';

import { CredentialExpiries } from '../../src/operations/credential-expiries.js';
import { ManualClock } from '../support/clock.js';

/** A socket that records how it was closed. */
class Socket {
  closed: [number, string] | undefined;
  close(code: number, reason: string): void {
    this.closed = [code, reason];
  }
}

/** The clock, and how many timers it holds, seen through `schedule`. */
function countingClock() {
  const clock = new ManualClock(1_000_000);
  let armed = 0;
  const schedule = clock.schedule.bind(clock);
  clock.schedule = (callback, delayMs) => {
    armed += 1;
    const cancel = schedule(callback, delayMs);
    return () => {
      armed -= 1;
      cancel();
    };
  };
  return { clock, armed: () => armed };
}

describe('credential expiries', () => {
  it('close each socket with 4403 at its moment, and no other', async () => {
    const { clock } = countingClock();
    const expiries = new CredentialExpiries<Socket>(clock, (socket) => socket.close(4403, 'Forbidden: credential expired'));
    const [soon, later] = [new Socket(), new Socket()];
    expiries.add(soon, 1_060_000);
    expiries.add(later, 1_120_000);
    await clock.advance(59_999);
    expect(soon.closed).toBeUndefined();
    await clock.advance(1);
    expect(soon.closed).toEqual([4403, 'Forbidden: credential expired']);
    expect(later.closed).toBeUndefined();
    await clock.advance(60_000);
    expect(later.closed).toEqual([4403, 'Forbidden: credential expired']);
  });

  it('share one timer among the sockets due at one moment, and let it go with the last one forgotten', async () => {
    const { clock, armed } = countingClock();
    const expiries = new CredentialExpiries<Socket>(clock, (socket) => socket.close(4403, 'Forbidden: credential expired'));
    const sockets = Array.from({ length: 1_000 }, () => new Socket());
    for (const socket of sockets) expiries.add(socket, 1_060_000);
    expect(armed()).toBe(1);
    for (const socket of sockets.slice(1)) expiries.forget(socket, 1_060_000);
    expect(armed()).toBe(1);
    expiries.forget(sockets[0]!, 1_060_000);
    expect(armed()).toBe(0);
    await clock.advance(120_000);
    expect(sockets.filter((socket) => socket.closed !== undefined)).toEqual([]);
  });

  it('ignore forgetting a socket it never held', () => {
    const { clock, armed } = countingClock();
    const expiries = new CredentialExpiries<Socket>(clock, (socket) => socket.close(4403, 'Forbidden: credential expired'));
    const held = new Socket();
    expiries.add(held, 1_060_000);
    expiries.forget(new Socket(), 1_060_000);
    expiries.forget(held, 1_070_000);
    expect(armed()).toBe(1);
  });
});
