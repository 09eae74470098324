import { performance } from 'node:perf_hooks';

/** The command a store's operation sends, as MongoDB names it (`countDocuments` sends `aggregate`, `bulkWrite` `update`). */
export type CommandName = 'find' | 'findAndModify' | 'insert' | 'update' | 'delete' | 'aggregate';

export type CommandResult = 'success' | 'failure';

/** Told of each command a store sent: its name, whether it succeeded, and how long it took in seconds. */
export type CommandObserver = (command: CommandName, result: CommandResult, seconds: number) => void;

/**
 * The commands the stores send, counted and timed where they are sent, for the database metrics.
 * The driver's command monitoring would tell the same of every command, but builds two events
 * and a decoded copy of each reply for them whether or not anything listens: about a tenth of a
 * request's CPU on a read of one conversation (docs/performance.md). It stays off unless tracing
 * needs it.
 *
 * The time is the operation's as the store sees it: the wait for a pooled connection and a
 * driver's retry included, which is what a request waits for.
 */
export class DatabaseCommands {
  private observers: CommandObserver[] = [];

  /** Returns a function that stops observing. */
  observe(observer: CommandObserver): () => void {
    this.observers = [...this.observers, observer];
    return () => {
      this.observers = this.observers.filter((other) => other !== observer);
    };
  }

  /** Awaits `work` (a Mongoose query runs when awaited) as one `command`. */
  async time<T>(command: CommandName, work: PromiseLike<T>): Promise<T> {
    const started = performance.now();
    try {
      const result = await work;
      this.tell(command, 'success', started);
      return result;
    } catch (error) {
      this.tell(command, 'failure', started);
      throw error;
    }
  }

  private tell(command: CommandName, result: CommandResult, started: number): void {
    const seconds = (performance.now() - started) / 1000;
    for (const observer of this.observers) observer(command, result, seconds);
  }
}
