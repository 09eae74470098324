import { AsyncResource } from 'node:async_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

import { type ChangeStream, type ChangeStreamOptions, type Collection, type Document, MongoServerError, type ResumeToken } from 'mongodb';

import { isDatabaseUnavailable } from '../db/database-failures.js';
import type { Logger } from '../logger.js';
import { Inbox, MISSED, type Missed } from './inbox.js';

/** Where a feed's changes go: a subscription's inbox. */
export interface FeedListener<Change> {
  push(change: Change | Missed): void;
}

/** What a feed tells the metrics. */
export interface FeedObserver {
  streamOpened(collection: string): void;
  streamClosed(collection: string): void;
  /** The stream was cut and opened again: from its last change (`resumed`), or from now once that history was gone. */
  streamRestarted(collection: string, resumed: boolean): void;
}

export interface ChangeFeedOptions<Change> {
  collection: Collection;
  /** The stages after `$changeStream`: `$match` the changes that matter, `$project` what routing them needs. */
  pipeline: Document[];
  streamOptions: Pick<ChangeStreamOptions, 'fullDocument' | 'fullDocumentBeforeChange'>;
  /** The user a change concerns and what their listeners get; null for a change no listener needs. */
  route(change: Document): { owner: number; change: Change } | null;
  logger: Logger;
  observer: FeedObserver;
}

/** A stream's life, from opening to closing: `opened` settles once its first answer came (or it failed to open). */
interface Running {
  opened: Promise<void>;
  stream?: ChangeStream;
}

/** One run of a feed's stream, across the reopenings after each cut. */
interface StreamLife {
  running: Running;
  /** Settles the feed's `opened` promise: once open, or with the error that kept it from opening. */
  opened: (error?: unknown) => void;
  /** Where to resume from: the last change handed out (or the end of the last batch). */
  token?: ResumeToken;
  isOpen: boolean;
  /** Attempts in a row that failed since the stream last answered. */
  failures: number;
}

/** How long one `getMore` waits for changes on the server; also how soon a feed notices it has no listeners left. */
const MAX_AWAIT_MS = 1_000;
/** Waits between attempts to reopen a cut stream: doubling from the first, up to the second. */
const RETRY_DELAY_MS = { first: 250, max: 5_000 };
/** Server codes meaning the stream cannot resume from its token: the changes since are gone (oplog rolled over, server restarted). */
const HISTORY_LOST_CODES = new Set([
  286, // ChangeStreamHistoryLost
  260, // InvalidResumeToken
]);

/** The label by which the server says that a change stream cannot be resumed (the driver has no constant for it). */
const NON_RESUMABLE_LABEL = 'NonResumableChangeStreamError';

/**
 * One change stream on one collection for this whole process, fanned out in memory to the
 * listeners of each user, so that a thousand subscribers cost one stream and not a thousand.
 *
 * The stream is opened when the first listener arrives and closed once none is left. Cut by a
 * database hiccup, it is opened again from the resume token of its last change (retrying with
 * growing waits while the database is away), so no change is lost. If the database no longer
 * holds the changes since that token (its oplog rolled over, or it restarted), or the stream
 * failed with an error it cannot resume from, the stream is opened from now, this is logged,
 * and every listener gets `MISSED`.
 */
export class ChangeFeed<Change> {
  private readonly listeners = new Map<number, Set<FeedListener<Change>>>();
  private listenerCount = 0;
  /** The stream's life while it runs: resolves once it is open (rejects if it could not open). */
  private running: Running | undefined;
  private closed = false;
  private readonly name: string;
  /**
   * The async context the feed was made in (the service's assembly): its stream runs there, not
   * in the context of the subscription whose listener happened to open it, whose trace would
   * otherwise own every poll of the stream for as long as it runs.
   */
  private readonly home = new AsyncResource('ChangeFeed');

  constructor(private readonly options: ChangeFeedOptions<Change>) {
    this.name = options.collection.collectionName;
  }

  /**
   * Adds a listener for `owner`'s changes. Resolves once the stream is open: every change
   * committed after that reaches the listener. Answers the function that removes it.
   */
  private async listen(owner: number, listener: FeedListener<Change>): Promise<() => void> {
    if (this.closed) throw new Error(`the change feed on ${this.name} is closed`);
    let owned = this.listeners.get(owner);
    if (owned === undefined) this.listeners.set(owner, (owned = new Set()));
    owned.add(listener);
    this.listenerCount += 1;
    const remove = () => {
      if (!owned.delete(listener)) return;
      this.listenerCount -= 1;
      if (owned.size === 0 && this.listeners.get(owner) === owned) this.listeners.delete(owner);
    };
    try {
      await this.start();
    } catch (error) {
      remove();
      throw error;
    }
    return remove;
  }

  /**
   * A new inbox of `owner`'s changes, holding at most `capacity` of them (see `Inbox`). Resolves
   * once the stream is open: every change committed after that reaches it, until it is closed.
   */
  async inbox(owner: number, capacity: number): Promise<Inbox<Change>> {
    const inbox = new Inbox<Change>(capacity);
    inbox.whenClosed(await this.listen(owner, inbox));
    return inbox;
  }

  /** Closes the stream for good; listeners get nothing more. */
  async close(): Promise<void> {
    this.closed = true;
    const stream = this.running?.stream;
    this.running = undefined;
    await stream?.close().catch(() => {});
  }

  private start(): Promise<void> {
    if (this.running === undefined) {
      let opened!: (error?: unknown) => void;
      const running: Running = {
        opened: new Promise<void>((resolve, reject) => (opened = (error) => (error === undefined ? resolve() : reject(error)))),
      };
      this.running = running;
      this.home.runInAsyncScope(() => void this.run(running, opened));
    }
    return this.running.opened;
  }

  /** Runs the stream until no listener is left or the feed closes: reopened after each cut, from its last change. */
  private async run(running: Running, opened: (error?: unknown) => void): Promise<void> {
    const life: StreamLife = { running, opened, isOpen: false, failures: 0 };
    while (this.isCurrent(running)) {
      const stream = this.open(life);
      try {
        await this.consume(stream, life);
      } catch (error) {
        if (!(await this.recover(error, life))) break;
      } finally {
        await stream.close().catch(() => {});
      }
    }
    if (life.isOpen) this.options.observer.streamClosed(this.name);
  }

  private isCurrent(running: Running): boolean {
    return this.running === running && !this.closed;
  }

  /** A stream from the last change seen (or from now), marked open once the database answers it. */
  private open(life: StreamLife): ChangeStream {
    const { collection, pipeline, streamOptions } = this.options;
    const stream = collection.watch(pipeline, {
      ...streamOptions,
      maxAwaitTimeMS: MAX_AWAIT_MS,
      ...(life.token === undefined ? {} : { startAfter: life.token }),
    });
    life.running.stream = stream;
    // The driver caches a resume token as each change is handed out and as each batch ends. The
    // `aggregate` that opens the stream answers with the first: from then on, every change is the
    // stream's (while the first `tryNext` goes on to wait in a `getMore`).
    stream.on('resumeTokenChanged', (resumeToken: ResumeToken) => {
      life.token = resumeToken;
      this.markOpen(life);
    });
    return stream;
  }

  private markOpen(life: StreamLife): void {
    if (life.isOpen || !this.isCurrent(life.running)) return;
    life.isOpen = true;
    this.options.observer.streamOpened(this.name);
    life.opened();
  }

  /** Hands out each change until the stream ends, the feed stops being current, or no listener is left. */
  private async consume(stream: ChangeStream, life: StreamLife): Promise<void> {
    for (;;) {
      const change = await stream.tryNext();
      if (!this.isCurrent(life.running)) return;
      this.markOpen(life);
      if (life.failures > 0) {
        this.options.logger.info({ collection: this.name }, 'change stream reopened after its last change: no change was missed');
        this.options.observer.streamRestarted(this.name, true);
        life.failures = 0;
      }
      if (change) this.dispatch(change);
      // The collection was dropped or renamed (an `invalidate`): go on after it.
      if (stream.closed) return;
      // No listener left: the stream closes; the next listener opens a new one.
      if (this.listenerCount === 0) {
        this.running = undefined;
        return;
      }
    }
  }

  /** After a stream failed: false when the feed stops (never opened, or no longer current); true to reopen it. */
  private async recover(error: unknown, life: StreamLife): Promise<boolean> {
    const { logger, observer } = this.options;
    if (!this.isCurrent(life.running)) return false;
    if (!life.isOpen) {
      // Never opened (a standalone server, the database away): those waiting get the error.
      this.running = undefined;
      life.opened(error);
      return false;
    }
    if (isHistoryLost(error) || !isTransient(error)) {
      if (isHistoryLost(error)) {
        logger.warn(
          { err: error, collection: this.name },
          'change stream history lost: the database no longer holds the changes since the last one delivered (it restarted, or its oplog rolled over); reopened from now, and every subscriber is told that changes were missed',
        );
      } else {
        logger.error(
          { err: error, collection: this.name },
          'change stream failed with an error it cannot resume from: reopened from now, and every subscriber is told that changes were missed',
        );
      }
      observer.streamRestarted(this.name, false);
      life.token = undefined;
      life.failures = 0;
      this.missedByAll();
      return true;
    }
    if (life.failures === 0) {
      logger.warn(
        { err: error, collection: this.name },
        'change stream interrupted: reopening it from its last change once the database answers',
      );
    }
    await sleep(Math.min(RETRY_DELAY_MS.first * 2 ** life.failures, RETRY_DELAY_MS.max));
    life.failures += 1;
    return true;
  }

  private dispatch(document: Document): void {
    const routed = this.options.route(document);
    if (routed === null) return;
    for (const listener of this.listeners.get(routed.owner) ?? []) listener.push(routed.change);
  }

  private missedByAll(): void {
    for (const owned of this.listeners.values()) for (const listener of owned) listener.push(MISSED);
  }
}

function isHistoryLost(error: unknown): boolean {
  return error instanceof MongoServerError && HISTORY_LOST_CODES.has(Number(error.code));
}

/**
 * Whether the stream may go on from its last change once the database answers again: it was cut
 * by an election, a shutdown or the network (what the driver could not resume itself, such as an
 * unlabelled error of a getMore failed before its cursor was found). An error the server says a
 * stream cannot resume from, or any other (a change too large to send), would fail again at the
 * same place.
 */
function isTransient(error: unknown): boolean {
  if (error instanceof MongoServerError && error.hasErrorLabel(NON_RESUMABLE_LABEL)) return false;
  return isDatabaseUnavailable(error);
}
