import { CloseCode } from 'graphql-ws';

import type { Clock } from '../clock.js';

/** A socket that can be closed when its caller's credential expires. */
interface Closable {
  close(code: number, reason: string): void;
}

/**
 * Closes each socket with 4403 when its caller's credential expires. The sockets whose credentials
 * expire at the same moment share one timer: an access token expires on a whole second and a
 * caller's sockets often share their token, so thousands of idle sockets hold an entry in a set
 * each rather than a timer each.
 */
export class CredentialExpiries<Socket extends Closable> {
  private readonly due = new Map<number, { sockets: Set<Socket>; cancel: () => void }>();

  constructor(private readonly clock: Clock) {}

  /** Closes `socket` at `at` (milliseconds since the epoch), unless it is forgotten first. */
  add(socket: Socket, at: number): void {
    let group = this.due.get(at);
    if (group === undefined) {
      group = { sockets: new Set(), cancel: this.clock.schedule(() => this.expire(at), at - this.clock.now()) };
      this.due.set(at, group);
    }
    group.sockets.add(socket);
  }

  /** `socket`, due at `at`, closed first. */
  forget(socket: Socket, at: number): void {
    const group = this.due.get(at);
    if (group === undefined || !group.sockets.delete(socket) || group.sockets.size > 0) return;
    group.cancel();
    this.due.delete(at);
  }

  private expire(at: number): void {
    const group = this.due.get(at);
    this.due.delete(at);
    for (const socket of group?.sockets ?? []) socket.close(CloseCode.Forbidden, 'Forbidden: credential expired');
  }
}
