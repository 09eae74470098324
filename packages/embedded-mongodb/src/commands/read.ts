import { BSON, type Document, Long, ObjectId } from 'bson';

import { checkPipeline, runPipeline } from '../aggregation.js';
import { changeStreamSource, parseChangeStream, type WatchTarget } from '../change-streams.js';
import { checkCollation } from '../collection-options.js';
import { DEFAULT_FIRST_BATCH, type DocumentSource } from '../cursors.js';
import type { Engine } from '../engine.js';
import { CommandError, ErrorCode, refusal } from '../errors.js';
import { FindExecution, type FindSpec } from '../executor.js';
import { evaluateLet } from '../matcher.js';
import { describePlan, parseSort, type SortSpec } from '../planner.js';
import { compileProjection } from '../projection.js';
import { asBuffer } from '../raw-bson.js';
import { compareValues, isNumber, isPlainObject, numberOf, typed, valuesAtPath } from '../values.js';
import { SERVER_VERSION } from './admin.js';
import { failGetMoreAfterCheckout } from './fail-command.js';
import { checkFields, type CommandHandler, type CommandRequest, optionalDocument, optionalNumber, toCursorId } from './request.js';

function findSpec(request: CommandRequest, filterField: string): FindSpec {
  const skip = optionalNumber(request, 'skip', 0);
  if (skip < 0) throw new CommandError(51024, `BSON field 'skip' value must be >= 0, actual value '${skip}'`);
  checkCollation(request.body.collation);
  return {
    filter: optionalDocument(request, filterField) ?? {},
    sort: parseSort(request.body.sort),
    skip,
    limit: Math.abs(optionalNumber(request, 'limit', 0)),
    hint: request.body.hint,
    variables: evaluateLet(request.body.let),
    deadline: deadline(request),
  };
}

/** maxTimeMS as an absolute time (undefined: no limit). */
function deadline(request: CommandRequest): number | undefined {
  const ms = optionalNumber(request, 'maxTimeMS', 0);
  if (ms < 0) throw new CommandError(ErrorCode.BadValue, `${ms} value for maxTimeMS is out of range [0, 2147483647]`);
  return ms > 0 ? Date.now() + ms : undefined;
}

const FIND_FIELDS = [
  'find',
  'filter',
  'projection',
  'sort',
  'hint',
  'skip',
  'limit',
  'batchSize',
  'singleBatch',
  'let',
  'collation',
  'tailable',
  'awaitData',
  'noCursorTimeout',
  'allowPartialResults',
  'allowDiskUse',
  'oplogReplay',
  'max',
  'min',
  'returnKey',
  'showRecordId',
  'readOnce',
];

const find: CommandHandler = (engine, request) => {
  checkFields(request, FIND_FIELDS);
  for (const option of ['max', 'min', 'returnKey', 'showRecordId']) {
    if (request.body[option] !== undefined && request.body[option] !== false)
      throw refusal(ErrorCode.InvalidOptions, `the find option '${option}'`);
  }
  const spec = findSpec(request, 'filter');
  const batchSize = optionalNumber(request, 'batchSize', DEFAULT_FIRST_BATCH);
  if (batchSize < 0) throw new CommandError(51024, `BSON field 'batchSize' value must be >= 0, actual value '${batchSize}'`);
  const tailable = request.body.tailable === true;
  const awaitData = request.body.awaitData === true;
  if (awaitData && !tailable) throw new CommandError(ErrorCode.FailedToParse, 'Cannot set awaitData without tailable');
  const collection = request.collection(engine);
  if (tailable) {
    if (collection && !collection.settings.capped) {
      throw new CommandError(
        ErrorCode.BadValue,
        `error processing query: ns=${request.ns} :: caused by :: tailable cursor requested on non capped collection`,
      );
    }
    if (spec.sort.length > 0)
      throw new CommandError(ErrorCode.BadValue, 'error processing query: cannot use tailable option with a sort other than {$natural: 1}');
  }
  const projector = compileProjection(request.body.projection, spec.filter, spec);
  const execution = new FindExecution(collection, spec, false, tailable);
  const source: DocumentSource = {
    next: () => {
      const match = execution.next();
      return match && (projector ? projector(match.raw) : match.raw);
    },
    release: () => execution.release(),
    // A tailable cursor ends only when its collection does (on a missing collection, at once).
    ...(tailable ? { tailable: { awaitData, finished: () => collection === undefined } } : {}),
  };
  const singleBatch = request.body.singleBatch === true || optionalNumber(request, 'limit', 0) < 0;
  return engine.cursors.open(request.ns, source, { batchSize, singleBatch, noTimeout: request.body.noCursorTimeout === true });
};

const getMore: CommandHandler = (engine, request) => {
  checkFields(request, ['getMore', 'collection', 'batchSize', 'term', 'lastKnownCommittedOpTime']);
  const id = toCursorId(request.body.getMore);
  const collection = request.body.collection;
  if (typeof collection !== 'string')
    throw new CommandError(ErrorCode.TypeMismatch, "BSON field 'getMore.collection' is missing but a required field");
  const batchSize = optionalNumber(request, 'batchSize', 0);
  const maxTimeMS = optionalNumber(request, 'maxTimeMS', 0);
  const ns = `${request.db}.${collection}`;
  return engine.cursors.getMore(id, ns, batchSize, maxTimeMS, (changeStream) => {
    request.continuesChangeStream = changeStream;
    failGetMoreAfterCheckout(engine, request, ns);
  });
};

const killCursors: CommandHandler = (engine, request) => {
  checkFields(request, ['killCursors', 'cursors']);
  const ids = Array.isArray(request.body.cursors) ? request.body.cursors.map(toCursorId) : [];
  const { killed, notFound } = engine.cursors.kill(ids);
  const asLongs = (list: bigint[]): Long[] => list.map((id) => Long.fromBigInt(id));
  return { cursorsKilled: asLongs(killed), cursorsNotFound: asLongs(notFound), cursorsAlive: [], cursorsUnknown: [], ok: 1 };
};

const count: CommandHandler = (engine, request) => {
  checkFields(request, ['count', 'query', 'limit', 'skip', 'hint', 'collation', 'fields']);
  const execution = new FindExecution(request.collection(engine), { ...findSpec(request, 'query'), sort: [] }, false);
  return { n: execution.count(), ok: 1 };
};

const distinct: CommandHandler = (engine, request) => {
  checkFields(request, ['distinct', 'key', 'query', 'collation', 'hint']);
  const key = request.body.key;
  if (typeof key !== 'string') throw new CommandError(ErrorCode.TypeMismatch, "BSON field 'distinct.key' is missing but a required field");
  const execution = new FindExecution(request.collection(engine), { ...findSpec(request, 'query'), sort: [] }, true);
  const values: unknown[] = [];
  for (let match = execution.next(); match; match = execution.next()) {
    for (const value of valuesAtPath(match.doc, key).values) if (value !== undefined) values.push(value);
  }
  values.sort(compareValues);
  return { values: values.filter((v, i) => i === 0 || compareValues(v, values[i - 1]) !== 0), ok: 1 };
};

/** The leading `$match`, `$sort`, `$skip` and `$limit` stages, run by the planner (with indexes). */
function pushDown(pipeline: Document[], hint: unknown, variables: Document | undefined): { spec: FindSpec; rest: Document[] } {
  let at = 0;
  let filter: Document = {};
  let sort: SortSpec = [];
  let skip = 0;
  let limit = 0;
  if (isPlainObject(pipeline[0]?.$match)) filter = pipeline[at++]!.$match as Document;
  if (pipeline[at]?.$sort !== undefined) {
    sort = parseSort(pipeline[at++]!.$sort);
    if (isNumber(pipeline[at]?.$skip)) skip = numberOf(pipeline[at++]!.$skip);
    if (isNumber(pipeline[at]?.$limit)) limit = numberOf(pipeline[at++]!.$limit);
  }
  return { spec: { filter, sort, skip, limit, hint, variables }, rest: pipeline.slice(at) };
}

/**
 * When the stages after the pushed-down ones only count their input, the one document they answer
 * for `n` matches (none for none, as a `$group` or `$count` of nothing): `{ $count: 'field' }`, or
 * a `$group` with a constant `_id` and one `{ $sum: 1 }` (the drivers' `countDocuments`).
 */
function countOnly(rest: Document[]): ((n: number) => Document) | undefined {
  if (rest.length !== 1) return undefined;
  const stage = rest[0]!;
  const keys = Object.keys(stage);
  if (keys.length !== 1) return undefined;
  if (keys[0] === '$count') {
    const field = stage.$count;
    // Anything else gets the stage's own checks and errors.
    return typeof field === 'string' && /^[^$.]+$/.test(field) ? (n) => ({ [field]: n }) : undefined;
  }
  const group = stage.$group;
  if (keys[0] !== '$group' || !isPlainObject(group) || !('_id' in group)) return undefined;
  const fields = Object.keys(group).filter((key) => key !== '_id');
  const id = group._id;
  const constant = id === null || isNumber(id) || typeof id === 'boolean' || (typeof id === 'string' && !id.startsWith('$'));
  if (!constant || fields.length !== 1) return undefined;
  const field = fields[0]!;
  const accumulator = group[field];
  const countsOne =
    isPlainObject(accumulator) &&
    Object.keys(accumulator).length === 1 &&
    isNumber(accumulator.$sum) &&
    numberOf(accumulator.$sum) === 1 &&
    // A name the stage refuses gets its error from the stage.
    /^[^$.]+$/.test(field);
  return countsOne ? (n) => ({ _id: id, [field]: n }) : undefined;
}

const AGGREGATE_FIELDS = [
  'aggregate',
  'pipeline',
  'explain',
  'allowDiskUse',
  'cursor',
  'bypassDocumentValidation',
  'collation',
  'hint',
  'let',
];

function watchTarget(request: CommandRequest, spec: Document): WatchTarget {
  const target: unknown = request.body.aggregate;
  if (typeof target === 'string') return { db: request.db, collection: target };
  if (spec.allChangesForCluster === true) {
    if (request.db !== 'admin') {
      throw new CommandError(
        ErrorCode.InvalidOptions,
        `A $changeStream with 'allChangesForCluster:true' may only be opened on the 'admin' database, and with no collection name; found ${request.db}.$cmd.aggregate`,
      );
    }
    return 'cluster';
  }
  if (request.db === 'admin' || request.db === 'config' || request.db === 'local') {
    throw new CommandError(ErrorCode.InvalidNamespace, `$changeStream may not be opened on the internal ${request.db} database`);
  }
  return { db: request.db };
}

const aggregate: CommandHandler = (engine, request) => {
  checkFields(request, AGGREGATE_FIELDS);
  const pipeline = checkPipeline(request.body.pipeline);
  checkCollation(request.body.collation);
  const readConcern = optionalDocument(request, 'readConcern');
  if (readConcern?.level === 'linearizable' && pipeline.some((stage) => '$out' in stage)) {
    throw new CommandError(ErrorCode.InvalidOptions, "$out cannot be used with a 'linearizable' read concern level");
  }
  const cursorOptions = optionalDocument(request, 'cursor');
  const explain = request.body.explain === true;
  if (!cursorOptions && !explain) {
    throw new CommandError(ErrorCode.FailedToParse, "The 'cursor' option is required, except for aggregate with the explain argument");
  }
  const batchSize = cursorOptions?.batchSize === undefined ? undefined : numberOf(cursorOptions.batchSize);
  const target: unknown = request.body.aggregate;
  const ns = typeof target === 'string' ? request.ns : `${request.db}.$cmd.aggregate`;
  const variables = evaluateLet(request.body.let);

  if (pipeline[0]?.$changeStream !== undefined) {
    const spec = pipeline[0].$changeStream as Document;
    const stream = parseChangeStream(engine, spec, pipeline.slice(1));
    const source = changeStreamSource(engine, watchTarget(request, isPlainObject(spec) ? spec : {}), stream, pipeline.slice(1));
    return engine.cursors.open(ns, source, { batchSize });
  }

  const collection = typeof target === 'string' ? request.collection(engine) : undefined;
  const { spec, rest } = pushDown(pipeline, request.body.hint, variables);
  const counted = countOnly(rest);
  const execution = new FindExecution(collection, spec, rest.length > 0 && !counted);
  if (explain) return explainAggregate(execution, spec, rest, ns, request.body);
  let source: DocumentSource;
  if (counted) {
    // As MongoDB does, when no stage needs a field: the matches are counted, from the index alone when its bounds are the whole filter.
    const n = execution.count();
    let done = n === 0;
    source = {
      next: () => {
        if (done) return undefined;
        done = true;
        return asBuffer(BSON.serialize(counted(n)));
      },
      release: () => execution.release(),
    };
  } else if (rest.length === 0) {
    source = { next: () => execution.next()?.raw, release: () => execution.release() };
  } else {
    const input: Document[] = [];
    for (let m = execution.next(); m; m = execution.next()) input.push(m.doc!);
    const out = rest[rest.length - 1]!.$out;
    const stages = out === undefined ? rest : rest.slice(0, -1);
    const results = runPipeline(stages, input, {
      variables,
      collection: (name) => engine.catalog.collection(request.db, name)?.records.valuesArray().map(typed) ?? [],
    });
    if (out !== undefined) {
      writeOut(engine, request.db, out, results);
      results.length = 0;
    }
    let at = 0;
    source = {
      next: () => {
        const doc = results[at++];
        return doc && asBuffer(BSON.serialize(doc));
      },
      release: () => {},
    };
  }
  return engine.cursors.open(ns, source, { batchSize });
};

/** `$out`: the results replace the target collection's documents, keeping its indexes; nothing changes if any fails. */
function writeOut(engine: Engine, db: string, target: unknown, results: Document[]): void {
  let into: { db: string; coll: string };
  if (typeof target === 'string') into = { db, coll: target };
  else if (isPlainObject(target) && typeof target.coll === 'string')
    into = { db: typeof target.db === 'string' ? target.db : db, coll: target.coll };
  else throw new CommandError(16990, '$out only supports a string or object argument, not ' + typeof target);
  if (isPlainObject(target) && target.timeseries !== undefined) throw refusal(ErrorCode.InvalidOptions, '$out to a time series collection');
  engine.catalog.replaceContents(
    into.db,
    into.coll,
    results.map((doc) => asBuffer(BSON.serialize('_id' in doc ? doc : { _id: new ObjectId(), ...doc }))),
  );
}

/** With `executionStats` (or `allPlansExecution`), the pushed-down stages run as the aggregate would run them, and their figures are shown. */
function explainAggregate(
  execution: FindExecution,
  spec: FindSpec,
  rest: Document[],
  ns: string,
  command: Document,
  verbosity = 'queryPlanner',
): Document {
  const plan = execution.plan ? describePlan(execution.plan, spec.filter, spec.sort, spec.skip, spec.limit) : { stage: 'EOF' };
  const queryPlanner = { namespace: ns, indexFilterSet: false, parsedQuery: spec.filter, winningPlan: plan, rejectedPlans: [] };
  let executionStats: Document | undefined;
  if (verbosity !== 'queryPlanner') {
    const started = process.hrtime.bigint();
    if (countOnly(rest)) execution.count();
    else while (execution.next());
    executionStats = {
      executionSuccess: true,
      nReturned: execution.stats.nReturned,
      executionTimeMillis: Number((process.hrtime.bigint() - started) / 1_000_000n),
      totalKeysExamined: execution.stats.keysExamined,
      totalDocsExamined: execution.stats.docsExamined,
      executionStages: plan,
    };
  }
  return {
    explainVersion: '1',
    stages: [{ $cursor: { queryPlanner, ...(executionStats && { executionStats }) } }, ...rest],
    serverInfo: { version: SERVER_VERSION },
    command,
    ok: 1,
  };
}

const VERBOSITIES = new Set(['queryPlanner', 'executionStats', 'allPlansExecution']);

const explain: CommandHandler = (engine, request) => {
  checkFields(request, ['explain', 'verbosity']);
  const verbosity = request.body.verbosity ?? 'allPlansExecution';
  if (typeof verbosity !== 'string' || !VERBOSITIES.has(verbosity)) {
    throw new CommandError(
      ErrorCode.BadValue,
      `Enumeration value '${String(verbosity)}' for field 'explain.verbosity' is not a valid value.`,
    );
  }
  const inner = optionalDocument(request, 'explain');
  const innerName = inner ? Object.keys(inner)[0] : undefined;
  if (!inner || !innerName) throw new CommandError(ErrorCode.FailedToParse, 'explain command requires a nested object');
  const innerRequest = request.as(innerName, inner);
  if (innerName === 'aggregate') {
    checkFields(innerRequest, AGGREGATE_FIELDS);
    const pipeline = checkPipeline(inner.pipeline);
    if (pipeline[0]?.$changeStream !== undefined) throw refusal(ErrorCode.InvalidOptions, 'explain of a $changeStream');
    const { spec, rest } = pushDown(pipeline, inner.hint, evaluateLet(inner.let));
    const collection = typeof inner.aggregate === 'string' ? innerRequest.collection(engine) : undefined;
    return explainAggregate(
      new FindExecution(collection, spec, rest.length > 0 && !countOnly(rest)),
      spec,
      rest,
      typeof inner.aggregate === 'string' ? innerRequest.ns : `${request.db}.$cmd.aggregate`,
      inner,
      verbosity,
    );
  }
  if (innerName !== 'find' && innerName !== 'count') throw refusal(ErrorCode.InvalidOptions, `explain of ${innerName}`);
  checkFields(innerRequest, innerName === 'find' ? FIND_FIELDS : ['count', 'query', 'limit', 'skip', 'hint', 'collation', 'fields']);
  const spec = innerName === 'find' ? findSpec(innerRequest, 'filter') : { ...findSpec(innerRequest, 'query'), sort: [] };
  const started = process.hrtime.bigint();
  const execution = new FindExecution(innerRequest.collection(engine), spec, false);
  const winningPlan = execution.plan ? describePlan(execution.plan, spec.filter, spec.sort, spec.skip, spec.limit) : { stage: 'EOF' };
  const queryPlanner = { namespace: innerRequest.ns, indexFilterSet: false, parsedQuery: spec.filter, winningPlan, rejectedPlans: [] };
  const reply: Document = { explainVersion: '1', queryPlanner };
  if (verbosity !== 'queryPlanner') {
    while (execution.next());
    reply.executionStats = {
      executionSuccess: true,
      nReturned: execution.stats.nReturned,
      executionTimeMillis: Number((process.hrtime.bigint() - started) / 1_000_000n),
      totalKeysExamined: execution.stats.keysExamined,
      totalDocsExamined: execution.stats.docsExamined,
      executionStages: winningPlan,
    };
  }
  return { ...reply, command: inner, serverInfo: { version: SERVER_VERSION }, ok: 1 };
};

export const readCommands: Record<string, CommandHandler> = {
  find,
  getMore,
  killCursors,
  count,
  distinct,
  aggregate,
  explain,
};
