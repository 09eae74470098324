import { BSON, Long, type Document } from 'bson';
import { Aggregator } from 'mingo';
import { DEFAULT_FIRST_BATCH, type DocumentSource } from '../cursors.js';
import type { Engine } from '../engine.js';
import { CommandError, ErrorCode } from '../errors.js';
import { FindExecution, type FindSpec } from '../executor.js';
import { MINGO_OPTIONS } from '../matching.js';
import { describePlan, parseSort, type SortSpec } from '../planner.js';
import { compileProjection } from '../projection.js';
import { asBuffer } from '../raw-bson.js';
import { compareValues, isPlainObject, promoted, valuesAtPath } from '../values.js';
import { SERVER_VERSION } from './admin.js';
import { optionalDocument, optionalNumber, toCursorId, type CommandHandler, type CommandRequest } from './request.js';

function findSpec(request: CommandRequest, filterField: string): FindSpec {
  const skip = optionalNumber(request, 'skip', 0);
  if (skip < 0) throw new CommandError(51024, `BSON field 'skip' value must be >= 0, actual value '${skip}'`);
  return {
    filter: optionalDocument(request, filterField) ?? {},
    sort: parseSort(request.body.sort),
    skip,
    limit: Math.abs(optionalNumber(request, 'limit', 0)),
    hint: request.body.hint,
  };
}

const find: CommandHandler = (engine, request) => {
  const spec = findSpec(request, 'filter');
  const batchSize = optionalNumber(request, 'batchSize', DEFAULT_FIRST_BATCH);
  if (batchSize < 0) throw new CommandError(51024, `BSON field 'batchSize' value must be >= 0, actual value '${batchSize}'`);
  const projector = compileProjection(request.body.projection, spec.filter);
  const execution = new FindExecution(request.collection(engine), spec, false);
  const source: DocumentSource = {
    next: () => {
      const match = execution.next();
      return match && (projector ? projector(match.raw) : match.raw);
    },
    release: () => execution.release(),
  };
  const singleBatch = request.body.singleBatch === true || optionalNumber(request, 'limit', 0) < 0;
  return engine.cursors.open(request.ns, source, { batchSize, singleBatch });
};

const getMore: CommandHandler = (engine, request) => {
  const id = toCursorId(request.body.getMore);
  const collection = request.body.collection;
  if (typeof collection !== 'string') throw new CommandError(ErrorCode.TypeMismatch, "BSON field 'getMore.collection' is missing but a required field");
  const batchSize = optionalNumber(request, 'batchSize', 0);
  return engine.cursors.getMore(id, `${request.db}.${collection}`, batchSize);
};

const killCursors: CommandHandler = (engine, request) => {
  const ids = Array.isArray(request.body.cursors) ? request.body.cursors.map(toCursorId) : [];
  const { killed, notFound } = engine.cursors.kill(ids);
  const asLongs = (list: bigint[]): Long[] => list.map((id) => Long.fromBigInt(id));
  return { cursorsKilled: asLongs(killed), cursorsNotFound: asLongs(notFound), cursorsAlive: [], cursorsUnknown: [], ok: 1 };
};

const count: CommandHandler = (engine, request) => {
  const execution = new FindExecution(request.collection(engine), { ...findSpec(request, 'query'), sort: [] }, false);
  return { n: execution.count(), ok: 1 };
};

const distinct: CommandHandler = (engine, request) => {
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
function pushDown(pipeline: Document[]): { spec: FindSpec; rest: Document[] } {
  let at = 0;
  let filter: Document = {};
  let sort: SortSpec = [];
  let skip = 0;
  let limit = 0;
  if (isPlainObject(pipeline[0]?.$match)) filter = pipeline[at++]!.$match as Document;
  if (pipeline[at]?.$sort !== undefined) {
    sort = parseSort(pipeline[at++]!.$sort);
    if (typeof pipeline[at]?.$skip === 'number') skip = pipeline[at++]!.$skip as number;
    if (typeof pipeline[at]?.$limit === 'number') limit = pipeline[at++]!.$limit as number;
  }
  return { spec: { filter, sort, skip, limit }, rest: pipeline.slice(at) };
}

const UNSUPPORTED_STAGES = new Set(['$out', '$merge', '$changeStream', '$search', '$geoNear']);

const aggregate: CommandHandler = (engine, request) => {
  const pipeline: unknown = request.body.pipeline;
  if (!Array.isArray(pipeline) || !pipeline.every(isPlainObject)) {
    throw new CommandError(ErrorCode.TypeMismatch, "'pipeline' option must be specified as an array");
  }
  for (const stage of pipeline) {
    const name = Object.keys(stage)[0] ?? '';
    if (UNSUPPORTED_STAGES.has(name)) {
      throw new CommandError(ErrorCode.BadValue, `${name} is not supported by the embedded engine`);
    }
  }
  const cursorOptions = optionalDocument(request, 'cursor');
  const explain = request.body.explain === true;
  if (!cursorOptions && !explain) {
    throw new CommandError(ErrorCode.FailedToParse, "The 'cursor' option is required, except for aggregate with the explain argument");
  }
  const target: unknown = request.body.aggregate;
  const collection = typeof target === 'string' ? request.collection(engine) : undefined;
  const ns = typeof target === 'string' ? request.ns : `${request.db}.$cmd.aggregate`;
  const { spec, rest } = pushDown(pipeline);
  const execution = new FindExecution(collection, spec, rest.length > 0);
  if (explain) {
    const plan = execution.plan ? describePlan(execution.plan, spec.filter, spec.sort, spec.skip, spec.limit) : { stage: 'EOF' };
    return { explainVersion: '1', stages: [{ $cursor: { queryPlanner: { namespace: ns, winningPlan: plan } } }, ...rest], ok: 1 };
  }
  let source: DocumentSource;
  if (rest.length === 0) {
    source = { next: () => execution.next()?.raw, release: () => execution.release() };
  } else {
    const input: Document[] = [];
    for (let m = execution.next(); m; m = execution.next()) input.push(m.doc!);
    const collectionResolver = (name: string): Document[] => {
      const other = engine.catalog.collection(request.db, name);
      return other ? other.records.valuesArray().map((raw) => promoted(raw)) : [];
    };
    const results = new Aggregator(rest, { ...MINGO_OPTIONS, collectionResolver }).run(input) as Document[];
    let at = 0;
    source = {
      next: () => {
        const doc = results[at++];
        return doc && asBuffer(BSON.serialize(doc));
      },
      release: () => {},
    };
  }
  const batchSize = cursorOptions?.batchSize === undefined ? undefined : Number(cursorOptions.batchSize);
  return engine.cursors.open(ns, source, { batchSize });
};

const explain: CommandHandler = (engine, request) => {
  const inner = optionalDocument(request, 'explain');
  const innerName = inner ? Object.keys(inner)[0] : undefined;
  if (!inner || (innerName !== 'find' && innerName !== 'count')) {
    throw new CommandError(ErrorCode.BadValue, `explain of ${String(innerName)} is not supported by the embedded engine`);
  }
  const innerRequest = request.as(innerName, inner);
  const spec = innerName === 'find' ? findSpec(innerRequest, 'filter') : { ...findSpec(innerRequest, 'query'), sort: [] };
  const started = process.hrtime.bigint();
  const execution = new FindExecution(innerRequest.collection(engine), spec, false);
  const winningPlan = execution.plan ? describePlan(execution.plan, spec.filter, spec.sort, spec.skip, spec.limit) : { stage: 'EOF' };
  const queryPlanner = { namespace: innerRequest.ns, indexFilterSet: false, parsedQuery: spec.filter, winningPlan, rejectedPlans: [] };
  const verbosity = request.body.verbosity ?? 'allPlansExecution';
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
