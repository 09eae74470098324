import { setTimeout as sleep } from 'node:timers/promises';

import { type ChangeStream, type ChangeStreamOptions, type Collection, type Document, MongoServerError, type ResumeToken } from 'mongodb';

import type { Logger } from '../logger.js';
import { MISSED, type Missed } from './inbox.js';

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

/** How long one `getMore` waits for changes on the server; also how soon a feed notices it has no listeners left. */
const MAX_AWAIT_MS = 1_000;
/** Waits between attempts to reopen a cut stream: doubling from the first, up to the second. */
const RETRY_DELAY_MS = { first: 250, max: 5_000 };
/** Server codes meaning the stream cannot resume from its token: the changes since are gone (oplog rolled over, server restarted). */
const HISTORY_LOST_CODES = new Set([
  286, // ChangeStreamHistoryLost
  260, // InvalidResumeToken
]);

/**
 * One change stream on one collection for this whole process, fanned out in memory to the
 * listeners of each user, so that a thousand subscribers cost one stream and not a thousand.
 *
 * The stream is opened when the first listener arrives and closed once none is left. Cut by a
 * database hiccup, it is opened again from the resume token of its last change (retrying with
 * growing waits while the database is away), so no change is lost. If the database no longer
 * holds the changes since that token (its oplog rolled over, or it restarted), the stream is
 * opened from now, this is logged, and every listener gets `MISSED`.
 */
export class ChangeFeed<Change> {
  private readonly listeners = new Map<number, Set<FeedListener<Change>>>();
  private listenerCount = 0;
  /** The stream's life while it runs: resolves once it is open (rejects if it could not open). */
  private running: Running | undefined;
  private closed = false;
  private readonly name: string;

  constructor(private readonly options: ChangeFeedOptions<Change>) {
    this.name = options.collection.collectionName;
  }

  /**
   * Adds a listener for `owner`'s changes. Resolves once the stream is open: every change
   * committed after that reaches the listener. Answers the function that removes it.
   */
  async listen(owner: number, listener: FeedListener<Change>): Promise<() => void> {
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
      void this.run(running, opened);
    }
    return this.running.opened;
  }

  private async run(running: Running, opened: (error?: unknown) => void): Promise<void> {
    const { collection, pipeline, streamOptions, logger, observer } = this.options;
    const isCurrent = () => this.running === running && !this.closed;
    let token: ResumeToken | undefined;
    let isOpen = false;
    let failures = 0;
    while (isCurrent()) {
      const stream = collection.watch(pipeline, {
        ...streamOptions,
        maxAwaitTimeMS: MAX_AWAIT_MS,
        ...(token === undefined ? {} : { startAfter: token }),
      });
      running.stream = stream;
      const markOpen = () => {
        if (isOpen || !isCurrent()) return;
        isOpen = true;
        observer.streamOpened(this.name);
        opened();
      };
      // The driver caches a resume token as each change is handed out and as each batch ends. The
      // `aggregate` that opens the stream answers with the first: from then on, every change is the
      // stream's (while the first `tryNext` goes on to wait in a `getMore`).
      stream.on('resumeTokenChanged', (resumeToken: ResumeToken) => {
        token = resumeToken;
        markOpen();
      });
      try {
        for (;;) {
          const change = await stream.tryNext();
          if (!isCurrent()) break;
          markOpen();
          if (failures > 0) {
            logger.info({ collection: this.name }, 'change stream reopened after its last change: no change was missed');
            observer.streamRestarted(this.name, true);
            failures = 0;
          }
          if (change) this.dispatch(change);
          // The collection was dropped or renamed (an `invalidate`): go on after it.
          if (stream.closed) break;
          // No listener left: the stream closes; the next listener opens a new one.
          if (this.listenerCount === 0) {
            this.running = undefined;
            break;
          }
        }
      } catch (error) {
        if (!isCurrent()) break;
        if (!isOpen) {
          // Never opened (a standalone server, the database away): those waiting get the error.
          this.running = undefined;
          opened(error);
          break;
        }
        if (isHistoryLost(error)) {
          logger.warn(
            { err: error, collection: this.name },
            'change stream history lost: the database no longer holds the changes since the last one delivered (it restarted, or its oplog rolled over); reopened from now, and every subscriber is told that changes were missed',
          );
          observer.streamRestarted(this.name, false);
          token = undefined;
          failures = 0;
          this.missedByAll();
        } else {
          if (failures === 0) {
            logger.warn(
              { err: error, collection: this.name },
              'change stream interrupted: reopening it from its last change once the database answers',
            );
          }
          await sleep(Math.min(RETRY_DELAY_MS.first * 2 ** failures, RETRY_DELAY_MS.max));
          failures += 1;
        }
      } finally {
        await stream.close().catch(() => {});
      }
    }
    if (isOpen) observer.streamClosed(this.name);
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
