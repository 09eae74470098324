import type { Document } from 'bson';
import { Aggregator } from 'mingo/aggregator';
import { Context } from 'mingo/core';
import { type Iterator, Lazy } from 'mingo/lazy';
import * as accumulatorOperators from 'mingo/operators/accumulator';
import * as expressionOperators from 'mingo/operators/expression';
import * as pipelineOperators from 'mingo/operators/pipeline';
import * as projectionOperators from 'mingo/operators/projection';
import * as queryOperators from 'mingo/operators/query';
import * as windowOperators from 'mingo/operators/window';
import type { Options } from 'mingo/types';

import { COMPARISON_EXPRESSIONS } from './expressions.js';
import { promote } from './values.js';

// The one mingo context of the engine: mingo's operators, with the engine's
// wherever MongoDB's semantics differ. It is handed to mingo's base `Query` and
// `Aggregator` classes (those of the package root would put mingo's defaults
// back in front of it).

export type Stage = (collection: Iterator, spec: unknown, options: Options) => Iterator;

/**
 * Stored documents enter a pipeline in the typed view, so that `$match` sees
 * their BSON types exactly as `find` does. Stages that only select documents
 * pass them on unchanged; a stage that computes gets them promoted (mingo's
 * expressions work on JavaScript numbers).
 */
const typedDocuments = new WeakSet<object>();

/**
 * Marks a document as holding typed values: a stored document in the typed
 * view (a pipeline's input, a document of the collection `$lookup` or
 * `$unionWith` reads), or one a stage builds around such documents.
 */
export function markTyped<T extends object>(doc: T): T {
  typedDocuments.add(doc);
  return doc;
}

function isTyped(doc: unknown): boolean {
  return typeof doc === 'object' && doc !== null && typedDocuments.has(doc);
}

function computing(stage: Stage): Stage {
  return (collection, spec, options) =>
    stage(
      collection.map((doc) => (isTyped(doc) ? promote(doc) : doc)),
      spec,
      options,
    );
}

/** mingo's stages that pass their input documents on unchanged, without reading them. */
const SELECTING_STAGES = new Set(['$skip', '$limit', '$sample', '$unionWith']);

/**
 * `$facet`: every sub-pipeline reads the same documents. Typed ones are shared
 * (no stage changes them); the others are copied, as some mingo stages change
 * their input in place.
 */
const $facet: Stage = (collection, spec, options) =>
  collection.transform((docs: unknown[]) => {
    const facets: Document = {};
    for (const [name, stages] of Object.entries(spec as Record<string, Document[]>)) {
      facets[name] = new Aggregator(stages, options).run(docs.map((doc) => (isTyped(doc) ? doc : promote(doc))));
    }
    return Lazy([markTyped(facets)]);
  });

/** A named foreign collection in the promoted view, for the stages that join on values. */
function promotedCollection(from: unknown, options: Options): unknown {
  return typeof from === 'string' && options.collectionResolver ? options.collectionResolver(from).map(promote) : from;
}

const mingoLookup = computing(pipelineOperators.$lookup as Stage);
const mingoGraphLookup = computing(pipelineOperators.$graphLookup as Stage);

/**
 * `$lookup` joins `localField` to `foreignField` on promoted values (mingo
 * hashes them); a `$lookup` by pipeline alone gives the pipeline the typed documents.
 */
const $lookup: Stage = (collection, spec, options) => {
  const lookup = spec as Document;
  const byFields = lookup.localField !== undefined || lookup.foreignField !== undefined;
  const from = byFields ? promotedCollection(lookup.from, options) : lookup.from;
  return mingoLookup(collection, { ...lookup, from }, options).map((doc: Document) => markTyped(doc));
};

/** `$graphLookup` follows promoted values, as `$lookup` by fields does. */
const $graphLookup: Stage = (collection, spec, options) =>
  mingoGraphLookup(collection, { ...(spec as Document), from: promotedCollection((spec as Document).from, options) }, options);

/**
 * The options of every mingo `Query` and `Aggregator` of the engine, with
 * `match` as the `$match` stage. Server-side JavaScript (`$where`,
 * `$function`, `$accumulator`) stays off: clients reach the engine over the network.
 */
export function engineMingoOptions(match: Stage): Partial<Options> {
  const pipeline: Record<string, Stage> = {};
  for (const [name, stage] of Object.entries(pipelineOperators as unknown as Record<string, Stage>)) {
    if (name.startsWith('$')) pipeline[name] = SELECTING_STAGES.has(name) ? stage : computing(stage);
  }
  const context = Context.init({
    accumulator: accumulatorOperators,
    expression: { ...expressionOperators, ...COMPARISON_EXPRESSIONS },
    pipeline: { ...pipeline, $match: match, $facet, $lookup, $graphLookup },
    projection: projectionOperators,
    query: queryOperators,
    window: windowOperators,
  });
  return { scriptEnabled: false, context };
}
