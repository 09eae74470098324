import type { Clock } from '../clock.js';

/**
 * Ends each live connection when its caller's credential expires (`expire`). The connections
 * whose credentials expire at the same moment share one timer: an access token expires on a
 * whole second and a caller's connections often share their token, so thousands of idle
 * connections hold an entry in a set each rather than a timer each.
 */
export class CredentialExpiries<Item> {
  private readonly due = new Map<number, { items: Set<Item>; cancel: () => void }>();

  constructor(
    private readonly clock: Pick<Clock, 'now' | 'schedule'>,
    private readonly expire: (item: Item) => void,
  ) {}

  /** Expires `item` at `at` (milliseconds since the epoch), unless it is forgotten first. */
  add(item: Item, at: number): void {
    let group = this.due.get(at);
    if (group === undefined) {
      group = { items: new Set(), cancel: this.clock.schedule(() => this.expireAt(at), at - this.clock.now()) };
      this.due.set(at, group);
    }
    group.items.add(item);
  }

  /** `item`, due at `at`, ended first. */
  forget(item: Item, at: number): void {
    const group = this.due.get(at);
    if (group === undefined || !group.items.delete(item) || group.items.size > 0) return;
    group.cancel();
    this.due.delete(at);
  }

  private expireAt(at: number): void {
    const group = this.due.get(at);
    this.due.delete(at);
    for (const item of group?.items ?? []) this.expire(item);
  }
}
