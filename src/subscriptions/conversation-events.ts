import { GRAPHQL_MAX_INT } from 'graphql';
import type { Db, Document } from 'mongodb';

import { eventsLost } from '../errors.js';
import type { ConversationEventKind } from '../graphql/generated/resolvers.js';
import { SUBSCRIPTION_INBOX_CAPACITY } from '../limits.js';
import type { Logger } from '../logger.js';
import { type ResultReader, StreamOf } from '../shared/iteration.js';
import { ChangeFeed, type FeedObserver } from './change-feed.js';
import { type Inbox, MISSED, type Missed } from './inbox.js';

/** What happened to one conversation (its owner and number); the schema's `ConversationEvent` resolves the conversation itself. */
export interface ConversationChange {
  kind: ConversationEventKind;
  userId: number;
  number: number;
}

const KINDS: Record<string, ConversationEventKind> = { insert: 'CREATED', update: 'UPDATED', replace: 'UPDATED', delete: 'DELETED' };

/**
 * The change stream of the conversations collection: inserts, updates, replacements and deletes.
 * A delete names only the document's `_id`; its owner comes from the pre-image (the document as
 * it was), which MongoDB keeps for collections with `changeStreamPreAndPostImages` (6.0 and later;
 * see `enablePreImages`). Updates carry both images, so either names the owner.
 */
export function conversationFeed(db: Db, collection: string, logger: Logger, observer: FeedObserver): ChangeFeed<ConversationChange> {
  let ownerlessLogged = false;
  return new ChangeFeed<ConversationChange>({
    collection: db.collection(collection),
    pipeline: [
      { $match: { operationType: { $in: Object.keys(KINDS) } } },
      {
        $project: {
          operationType: 1,
          clusterTime: 1,
          'fullDocument.userId': 1,
          'fullDocument.id': 1,
          'fullDocumentBeforeChange.userId': 1,
          'fullDocumentBeforeChange.id': 1,
        },
      },
    ],
    streamOptions: { fullDocument: 'updateLookup', fullDocumentBeforeChange: 'whenAvailable' },
    route(change: Document) {
      const kind = KINDS[change.operationType as string]!;
      const { userId, id } = (change.fullDocument ?? change.fullDocumentBeforeChange ?? {}) as { userId?: unknown; id?: unknown };
      if (isId(userId, Number.MAX_SAFE_INTEGER) && isId(id, GRAPHQL_MAX_INT))
        return { owner: userId, change: { kind, userId, number: id } };
      if (change.fullDocument == null && change.fullDocumentBeforeChange == null && !ownerlessLogged) {
        ownerlessLogged = true;
        logger.warn(
          { collection },
          'a conversation change without its document (no pre-image) cannot be sent to its owner: pre-images must stay on for this collection',
        );
      }
      return null;
    },
    logger,
    observer,
  });
}

function isId(value: unknown, max: number): value is number {
  return Number.isSafeInteger(value) && (value as number) > 0 && (value as number) <= max;
}

/** A user's conversation changes from now on; ends with EVENTS_LOST when some could not be delivered. */
export async function conversationChanges(
  feed: ChangeFeed<ConversationChange>,
  userId: number,
): Promise<AsyncIterableIterator<ConversationChange>> {
  return new ConversationChanges(await feed.inbox(userId, SUBSCRIPTION_INBOX_CAPACITY));
}

/**
 * What a subscriber's inbox holds, as its stream of changes. Whichever way it ends (its consumer
 * ends it, or changes were missed) its inbox closes, which stops its feed listener. A class, so
 * that each of thousands of idle subscriptions holds one small object rather than closures.
 */
class ConversationChanges extends StreamOf<ConversationChange | Missed, ConversationChange> {
  constructor(private readonly inbox: Inbox<ConversationChange>) {
    super();
  }

  protected readNext(reader: ResultReader<ConversationChange>): void {
    this.readThrough(this.inbox, reader);
  }

  protected release(): void {
    this.inbox.close();
  }

  protected step(result: IteratorResult<ConversationChange | Missed>): IteratorResult<ConversationChange> {
    if (result.value !== MISSED) return result as IteratorResult<ConversationChange>;
    void this.end();
    throw eventsLost('the change stream lost its place, or this client read too slowly');
  }
}

/**
 * Turns on pre-images for the conversations collection, so that deletes name their owner.
 * MongoDB keeps each pre-image until the oplog entry of its change is gone (or for
 * `changeStreamOptions.preAndPostImages.expireAfterSeconds`); an update stores the whole
 * previous document, messages included.
 */
export async function enablePreImages(db: Db, collection: string): Promise<void> {
  await db.command({ collMod: collection, changeStreamPreAndPostImages: { enabled: true } });
}
