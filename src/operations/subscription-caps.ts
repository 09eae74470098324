import { tooManySubscriptions } from '../errors.js';

/** Live connections one caller, and one client address, may hold open at once, every transport counted together. */
export interface LiveConnectionLimits {
  perCaller: number;
  perAddress: number;
}

/** Subscriptions each caller holds, over every transport to this process, within a cap. */
export class CallerSubscriptions {
  private readonly held = new Map<number, number>();

  constructor(private readonly cap: number) {}

  /** Counts one more for `userId`; throws TOO_MANY_SUBSCRIPTIONS when they hold the cap already. */
  take(userId: number): void {
    const held = this.held.get(userId) ?? 0;
    if (held >= this.cap) throw tooManySubscriptions(this.cap);
    this.held.set(userId, held + 1);
  }

  give(userId: number): void {
    const left = (this.held.get(userId) ?? 1) - 1;
    if (left === 0) this.held.delete(userId);
    else this.held.set(userId, left);
  }
}
