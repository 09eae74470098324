import { BSON, type Document, Timestamp } from 'bson';
import { Aggregator } from 'mingo/aggregator';

import type { DocumentSource } from './cursors.js';
import { identical } from './documents.js';
import type { Engine } from './engine.js';
import { CommandError, ErrorCode, refusal } from './errors.js';
import { compileFilter, MINGO_OPTIONS } from './matcher.js';
import type { ChangeEvent } from './oplog.js';
import { asBuffer } from './raw-bson.js';
import { isPlainObject, promote, typed } from './values.js';

/** What a `$changeStream` watches: one collection, one database, or every database. */
export type WatchTarget = { db: string; collection: string } | { db: string } | 'cluster';

type FullDocument = 'default' | 'updateLookup' | 'whenAvailable' | 'required';
type FullDocumentBeforeChange = 'off' | 'whenAvailable' | 'required';

interface StreamSpec {
  fullDocument: FullDocument;
  fullDocumentBeforeChange: FullDocumentBeforeChange;
  /** Events strictly after this position (a resume token or start time) are returned. */
  start?: Position;
  startAfterInvalidate: boolean;
}

/**
 * A place in the oplog as a resume token encodes it: a cluster time and what
 * stands there. An event token resumes after that event (and an invalidate
 * token after the invalidate that follows it); a high-water mark, as MongoDB's
 * postBatchResumeToken before any event, resumes with the events at its time.
 */
interface Position {
  time: Timestamp;
  kind: TokenKind;
}

/** Token kinds in their order at one cluster time (the hex digits they are encoded with). */
const TOKEN_KINDS = ['highWaterMark', 'event', 'invalidate'] as const;
type TokenKind = (typeof TOKEN_KINDS)[number];

const SPEC_FIELDS = new Set([
  'fullDocument',
  'fullDocumentBeforeChange',
  'resumeAfter',
  'startAfter',
  'startAtOperationTime',
  'allChangesForCluster',
  'showExpandedEvents',
  'showSystemEvents',
  'showRawUpdateDescription',
]);
/** Stages MongoDB allows after `$changeStream`. */
const STAGES = new Set(['$addFields', '$match', '$project', '$replaceRoot', '$replaceWith', '$redact', '$set', '$unset']);

/** A resume token: `{_data: hex}`, opaque to clients, ordered like the oplog. */
function resumeToken(position: Position): Document {
  const hex = (n: number, width: number): string => n.toString(16).toUpperCase().padStart(width, '0');
  return { _data: `82${hex(position.time.high, 8)}${hex(position.time.low, 8)}${hex(TOKEN_KINDS.indexOf(position.kind), 2)}` };
}

function parseToken(token: unknown, option: string): Position {
  const data = isPlainObject(token) ? token._data : undefined;
  const match = typeof data === 'string' ? /^82([0-9A-F]{8})([0-9A-F]{8})(0[012])$/i.exec(data) : null;
  if (!match) throw new CommandError(ErrorCode.FailedToParse, `Bad resume token: ${option} must be a resume token produced by this server`);
  return {
    time: new Timestamp({ t: parseInt(match[1]!, 16), i: parseInt(match[2]!, 16) }),
    kind: TOKEN_KINDS[Number(match[3])]!,
  };
}

/** Checks a `$changeStream` stage and what follows it; refuses what the engine does not implement. */
export function parseChangeStream(engine: Engine, spec: unknown, rest: Document[]): StreamSpec {
  if (engine.replicaSet === undefined) {
    throw new CommandError(40573, 'The $changeStream stage is only supported on replica sets');
  }
  if (!isPlainObject(spec)) throw new CommandError(50808, '$changeStream stage expects a document as argument');
  for (const field of Object.keys(spec)) {
    if (!SPEC_FIELDS.has(field)) throw new CommandError(40415, `BSON field '$changeStream.${field}' is an unknown field.`);
  }
  for (const flag of ['showExpandedEvents', 'showSystemEvents', 'showRawUpdateDescription']) {
    if (spec[flag] === true) throw refusal(ErrorCode.InvalidOptions, `$changeStream option '${flag}'`);
  }
  for (const stage of rest) {
    const name = Object.keys(stage)[0] ?? '';
    if (name === '$changeStream') throw new CommandError(40602, '$changeStream is only valid as the first stage in a pipeline.');
    if (!STAGES.has(name)) throw new CommandError(ErrorCode.IllegalOperation, `${name} is not permitted in a $changeStream pipeline`);
  }
  const fullDocument = (spec.fullDocument ?? 'default') as FullDocument;
  if (!['default', 'updateLookup', 'whenAvailable', 'required'].includes(fullDocument)) {
    throw new CommandError(
      ErrorCode.BadValue,
      `Enumeration value '${String(fullDocument)}' for field '$changeStream.fullDocument' is not a valid value.`,
    );
  }
  const fullDocumentBeforeChange = (spec.fullDocumentBeforeChange ?? 'off') as FullDocumentBeforeChange;
  if (!['off', 'whenAvailable', 'required'].includes(fullDocumentBeforeChange)) {
    throw new CommandError(
      ErrorCode.BadValue,
      `Enumeration value '${String(fullDocumentBeforeChange)}' for field '$changeStream.fullDocumentBeforeChange' is not a valid value.`,
    );
  }
  if (spec.resumeAfter !== undefined && spec.startAfter !== undefined) {
    throw new CommandError(50865, "Do not specify both 'resumeAfter' and 'startAfter' in a $changeStream stage");
  }
  if (spec.startAtOperationTime !== undefined && (spec.resumeAfter !== undefined || spec.startAfter !== undefined)) {
    throw new CommandError(40674, 'Only one type of resume option is allowed, but multiple were found');
  }
  let start: Position | undefined;
  let startAfterInvalidate = false;
  if (spec.resumeAfter !== undefined) {
    start = parseToken(spec.resumeAfter, 'resumeAfter');
    if (start.kind === 'invalidate') {
      throw new CommandError(
        ErrorCode.InvalidResumeToken,
        "Attempting to resume a change stream using 'resumeAfter' is not allowed from an invalidate notification",
      );
    }
  } else if (spec.startAfter !== undefined) {
    start = parseToken(spec.startAfter, 'startAfter');
    startAfterInvalidate = start.kind === 'invalidate';
  } else if (spec.startAtOperationTime !== undefined) {
    if (!(spec.startAtOperationTime instanceof Timestamp)) {
      throw new CommandError(
        ErrorCode.TypeMismatch,
        "BSON field '$changeStream.startAtOperationTime' is the wrong type, expected type 'timestamp'",
      );
    }
    start = { time: spec.startAtOperationTime, kind: 'highWaterMark' };
  }
  return { fullDocument, fullDocumentBeforeChange, start, startAfterInvalidate };
}

/**
 * A change stream as a tailable cursor source: reads the oplog from its
 * position, keeps the changes of its namespace, shapes them as MongoDB's
 * change events and runs the stages that follow `$changeStream` (with mingo).
 */
export function changeStreamSource(engine: Engine, target: WatchTarget, spec: StreamSpec, stages: Document[]): DocumentSource {
  const oplog = engine.oplog;
  let position: number;
  /** The cluster time of the last change read (returned or not), for postBatchResumeToken. */
  let readUpTo: Position;
  if (spec.start) {
    const { time } = spec.start;
    if (!oplog.holdsAfter(time)) {
      throw new CommandError(
        ErrorCode.ChangeStreamHistoryLost,
        'Resume of change stream was not possible, as the resume point may no longer be in the oplog.',
      );
    }
    position = spec.start.kind === 'highWaterMark' ? oplog.positionFrom(time) : oplog.positionAfter(time);
    readUpTo = spec.start;
  } else {
    // A new stream starts at the moment after the latest change, as mongod's does.
    const latest = oplog.latest();
    position = oplog.positionAfter(latest);
    readUpTo = { time: new Timestamp({ t: latest.high, i: latest.low + 1 }), kind: 'highWaterMark' };
  }
  let finished = false;
  /** An invalidate to return next (after the drop or rename that causes it). */
  let pendingInvalidate: ChangeEvent | undefined;
  if (spec.start?.kind === 'event') {
    // Resuming right after a drop of the watched collection: its invalidate comes first.
    const resumed = oplog.at(position - 1);
    if (resumed && resumed.clusterTime.equals(spec.start.time) && invalidates(target, resumed)) pendingInvalidate = resumed;
  }
  if (spec.startAfterInvalidate) pendingInvalidate = undefined;

  const transform = compileStages(stages);

  const next = (): Buffer | undefined => {
    for (;;) {
      if (finished) return undefined;
      if (pendingInvalidate) {
        const cause = pendingInvalidate;
        pendingInvalidate = undefined;
        finished = true;
        readUpTo = { time: cause.clusterTime, kind: 'invalidate' };
        return asBuffer(
          BSON.serialize({
            _id: resumeToken(readUpTo),
            operationType: 'invalidate',
            clusterTime: cause.clusterTime,
            wallTime: new Date(cause.wallTime),
          }),
        );
      }
      if (oplog.dropped(position)) {
        throw new CommandError(
          ErrorCode.ChangeStreamHistoryLost,
          'Resume of change stream was not possible, as the resume point may no longer be in the oplog.',
        );
      }
      const event = oplog.at(position);
      if (!event) return undefined;
      position++;
      readUpTo = { time: event.clusterTime, kind: 'event' };
      if (!concerns(target, event)) continue;
      if (invalidates(target, event)) pendingInvalidate = event;
      const shaped = shape(engine, event, spec);
      const out = transform(shaped);
      if (!out) continue;
      if (out !== shaped && !identical(promote(out._id), promote(shaped._id))) {
        throw new CommandError(
          ErrorCode.ChangeStreamFatalError,
          'Encountered an event whose _id field, which contains the resume token, was modified by the pipeline. Modifying the _id field of an event makes it impossible to resume the stream from that point. Only transformations that retain the unmodified _id field are allowed.',
        );
      }
      return asBuffer(BSON.serialize(out));
    }
  };

  return {
    next,
    release: () => {},
    tailable: { awaitData: true, finished: () => finished },
    batchFields: () => ({ postBatchResumeToken: resumeToken(readUpTo) }),
    changeStream: true,
  };
}

/**
 * The stages after `$changeStream`: `$match` runs on the engine's own matcher
 * (so events keep their BSON types when they only get filtered), the others on mingo.
 */
function compileStages(stages: Document[]): (event: Document) => Document | undefined {
  const steps = stages.map((stage): ((doc: Document) => Document | undefined) => {
    if (isPlainObject(stage.$match)) {
      const matcher = compileFilter(stage.$match);
      return (doc) => (matcher.test(doc) ? doc : undefined);
    }
    const aggregator = new Aggregator([promote(stage) as Document], MINGO_OPTIONS);
    return (doc) => (aggregator.run([promote(doc) as Document]) as Document[])[0];
  });
  return (event) => {
    let doc: Document | undefined = event;
    for (const step of steps) {
      if (!doc) return undefined;
      doc = step(doc);
    }
    return doc;
  };
}

function concerns(target: WatchTarget, event: ChangeEvent): boolean {
  if (target === 'cluster') return !isInternal(event.db);
  if (event.db !== target.db) return false;
  if (!('collection' in target)) return !event.collection?.startsWith('system.');
  if (event.operation === 'dropDatabase') return true;
  return event.collection === target.collection;
}

function isInternal(db: string): boolean {
  return db === 'admin' || db === 'config' || db === 'local';
}

/** Changes after which a stream cannot go on: its collection dropped or renamed, its database dropped. */
function invalidates(target: WatchTarget, event: ChangeEvent): boolean {
  if (target === 'cluster') return false;
  if ('collection' in target) return event.operation === 'drop' || event.operation === 'rename' || event.operation === 'dropDatabase';
  return event.operation === 'dropDatabase';
}

/** A change event as MongoDB 7.0 shapes it (without expanded events). */
function shape(engine: Engine, event: ChangeEvent, spec: StreamSpec): Document {
  const out: Document = {
    _id: resumeToken({ time: event.clusterTime, kind: 'event' }),
    operationType: event.operation,
    clusterTime: event.clusterTime,
    wallTime: new Date(event.wallTime),
  };
  const collection = event.collection === undefined ? undefined : engine.catalog.collection(event.db, event.collection);
  const preImages = collection?.settings.preImages ?? false;
  if (event.operation === 'insert' || event.operation === 'replace') out.fullDocument = typed(event.after!);
  out.ns = event.collection === undefined ? { db: event.db } : { db: event.db, coll: event.collection };
  if (event.to) out.to = { db: event.to.db, coll: event.to.collection };
  if (event.id !== undefined) out.documentKey = { _id: event.id };
  if (event.operation === 'update') {
    out.updateDescription = describeUpdate(event);
    if (spec.fullDocument === 'updateLookup') out.fullDocument = lookup(engine, event);
    else if (spec.fullDocument !== 'default') out.fullDocument = postImage(event, spec.fullDocument, preImages);
  } else if (event.operation === 'replace' && spec.fullDocument === 'updateLookup') {
    out.fullDocument = typed(event.after!);
  }
  if (spec.fullDocumentBeforeChange !== 'off' && ['update', 'replace', 'delete'].includes(event.operation)) {
    out.fullDocumentBeforeChange = preImage(event, spec.fullDocumentBeforeChange, preImages);
  }
  return out;
}

/** updateLookup: the document as it is now (null once it is gone). */
function lookup(engine: Engine, event: ChangeEvent): Document | null {
  const collection = engine.catalog.collection(event.db, event.collection!);
  if (!collection) return null;
  const raw = collection.findById(event.id);
  return raw ? typed(raw) : null;
}

function postImage(event: ChangeEvent, mode: FullDocument, enabled: boolean): Document | null {
  if (enabled) return typed(event.after!);
  if (mode === 'required') throw missingImage('post', event);
  return null;
}

function preImage(event: ChangeEvent, mode: FullDocumentBeforeChange, enabled: boolean): Document | null {
  if (enabled && event.before) return typed(event.before);
  if (mode === 'required') throw missingImage('pre', event);
  return null;
}

function missingImage(kind: 'pre' | 'post', event: ChangeEvent): CommandError {
  return new CommandError(
    ErrorCode.NoMatchingDocument,
    `Change stream was configured to require a ${kind}-image for all update, delete and replace events, but the ${kind}-image was not available for event: ${event.operation} at ${event.clusterTime.toString()}`,
  );
}

/**
 * updateDescription: for update operators, the paths they wrote (read back
 * from the document after the change) and removed, as MongoDB logs them; for
 * pipeline-style updates, a difference of the two versions.
 */
function describeUpdate(event: ChangeEvent): Document {
  const after = typed(event.after!);
  if (event.description) {
    const updatedFields: Document = {};
    for (const path of event.description.updated) updatedFields[path] = valueAtPath(after, path);
    return { updatedFields, removedFields: event.description.removed, truncatedArrays: [] };
  }
  return difference(typed(event.before!), after);
}

function valueAtPath(doc: Document, path: string): unknown {
  let value: unknown = doc;
  for (const part of path.split('.')) {
    if (Array.isArray(value)) value = value[Number(part)];
    else if (isPlainObject(value)) value = Object.hasOwn(value, part) ? value[part] : undefined;
    else return undefined;
  }
  return value;
}

function difference(before: Document, after: Document): Document {
  const updatedFields: Document = {};
  const removedFields: string[] = [];
  const truncatedArrays: Document[] = [];
  const walk = (a: Document, b: Document, prefix: string): void => {
    for (const name of Object.keys(a)) if (!Object.hasOwn(b, name)) removedFields.push(prefix + name);
    for (const [name, value] of Object.entries(b)) {
      const path = prefix + name;
      const old = Object.hasOwn(a, name) ? a[name] : undefined;
      if (old !== undefined && identical(old, value)) continue;
      if (isPlainObject(old) && isPlainObject(value)) walk(old, value, `${path}.`);
      else if (Array.isArray(old) && Array.isArray(value)) {
        if (value.length < old.length) truncatedArrays.push({ field: path, newSize: value.length });
        value.forEach((element, i) => {
          if (i < old.length && identical(old[i], element)) return;
          if (i < old.length && isPlainObject(old[i]) && isPlainObject(element)) walk(old[i] as Document, element, `${path}.${i}.`);
          else updatedFields[`${path}.${i}`] = element;
        });
      } else updatedFields[path] = value;
    }
  };
  walk(before, after, '');
  return { updatedFields, removedFields, truncatedArrays };
}
