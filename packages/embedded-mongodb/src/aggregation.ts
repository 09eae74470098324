import type { Document } from 'bson';
import { Aggregator } from 'mingo/aggregator';

import { CommandError, ErrorCode, refusal } from './errors.js';
import { MINGO_OPTIONS } from './matcher.js';
import { markTyped } from './mingo.js';
import { isPlainObject, promote } from './values.js';

/** MongoDB 7.0's aggregation stages that the engine does not run. */
const REFUSED_STAGES = new Set([
  '$merge',
  '$collStats',
  '$currentOp',
  '$geoNear',
  '$indexStats',
  '$listLocalSessions',
  '$listSampledQueries',
  '$listSearchIndexes',
  '$listSessions',
  '$planCacheStats',
  '$search',
  '$searchMeta',
  '$shardedDataDistribution',
  '$vectorSearch',
  '$changeStreamSplitLargeEvent',
]);

/** The stages the engine runs (through mingo, except `$match`, `$out` and `$changeStream`). */
const STAGES = new Set([
  '$addFields',
  '$bucket',
  '$bucketAuto',
  '$changeStream',
  '$count',
  '$densify',
  '$documents',
  '$facet',
  '$fill',
  '$graphLookup',
  '$group',
  '$limit',
  '$lookup',
  '$match',
  '$out',
  '$project',
  '$redact',
  '$replaceRoot',
  '$replaceWith',
  '$sample',
  '$set',
  '$setWindowFields',
  '$skip',
  '$sort',
  '$sortByCount',
  '$unionWith',
  '$unset',
  '$unwind',
]);

/** Checks every stage name (nested pipelines included) before anything runs. */
export function checkPipeline(pipeline: unknown): Document[] {
  if (!Array.isArray(pipeline) || !pipeline.every(isPlainObject)) {
    throw new CommandError(ErrorCode.TypeMismatch, "'pipeline' option must be specified as an array");
  }
  pipeline.forEach((stage, i) => {
    const names = Object.keys(stage);
    if (names.length !== 1) {
      throw new CommandError(40323, 'A pipeline stage specification object must contain exactly one field.');
    }
    const name = names[0]!;
    if (REFUSED_STAGES.has(name)) throw refusal(40324, `the ${name} stage`);
    if (!STAGES.has(name)) throw new CommandError(40324, `Unrecognized pipeline stage name: '${name}'`);
    if (name === '$out' && i !== pipeline.length - 1) throw new CommandError(40601, '$out can only be the final stage in the pipeline');
    if (name === '$changeStream' && i !== 0) throw new CommandError(40602, '$changeStream is only valid as the first stage in a pipeline.');
    const spec = stage[name];
    if (name === '$facet' && isPlainObject(spec)) for (const inner of Object.values(spec)) checkPipeline(inner);
    if ((name === '$lookup' || name === '$unionWith') && isPlainObject(spec) && spec.pipeline !== undefined) checkPipeline(spec.pipeline);
  });
  return pipeline as Document[];
}

export interface PipelineOptions {
  variables?: Document;
  /** The documents (typed view) of another collection of the same database, for `$lookup`, `$unionWith` and `$graphLookup`. */
  collection(name: string): Document[];
}

/** Runs stages with mingo over stored documents in the typed view (see `markTyped`). */
export function runPipeline(stages: Document[], input: Document[], options: PipelineOptions): Document[] {
  const aggregator = new Aggregator(
    stages.map((stage) => promote(stage) as Document),
    {
      ...MINGO_OPTIONS,
      variables: options.variables,
      collectionResolver: (name) => options.collection(name).map(markTyped),
    },
  );
  return aggregator.run(input.map(markTyped)) as Document[];
}
