import { describe, expect, it } from 'vitest';

import { Inbox, MISSED } from '../../src/subscriptions/inbox.js';

describe('an inbox', () => {
  it('hands changes to its reader in order, at once to one already waiting', async () => {
    const inbox = new Inbox<number>(3);
    const waiting = inbox.next();
    inbox.push(1);
    expect(await waiting).toEqual({ value: 1, done: false });
    inbox.push(2);
    inbox.push(3);
    expect(await inbox.next()).toEqual({ value: 2, done: false });
    expect(await inbox.next()).toEqual({ value: 3, done: false });
  });

  it('holds at most its capacity: a reader that falls further behind gets MISSED in place of all it had', async () => {
    const inbox = new Inbox<number>(2);
    for (const change of [1, 2, 3]) inbox.push(change);
    expect(await inbox.next()).toEqual({ value: MISSED, done: false });
    inbox.push(4);
    expect(await inbox.next()).toEqual({ value: 4, done: false });
  });

  it('takes MISSED from its feed in place of whatever it holds', async () => {
    const inbox = new Inbox<number>(5);
    inbox.push(1);
    inbox.push(MISSED);
    inbox.push(2);
    expect([await inbox.next(), await inbox.next()]).toEqual([
      { value: MISSED, done: false },
      { value: 2, done: false },
    ]);
  });

  it('ends at once when closed, even while its reader waits, and stops its feed once', async () => {
    const inbox = new Inbox<number>(2);
    let stopped = 0;
    inbox.whenClosed(() => (stopped += 1));
    const waiting = inbox.next();
    await inbox.return();
    inbox.close();
    expect(await waiting).toEqual({ value: undefined, done: true });
    inbox.push(1);
    expect(await inbox.next()).toEqual({ value: undefined, done: true });
    expect(stopped).toBe(1);
    let late = 0;
    inbox.whenClosed(() => (late += 1));
    expect(late).toBe(1);
  });
});
