import { createHash } from 'node:crypto';

import type { DocumentStore } from '@apollo/server';
import { type DocumentNode, GraphQLError, type GraphQLSchema, parse, specifiedRules, validate } from 'graphql';
import { LRUCache } from 'lru-cache';

import { LIMIT_RULES, PARSE_OPTIONS } from './limits.js';

/**
 * Valid documents held, most recently used kept, and the total UTF-8 bytes of their texts: clients
 * send the same few operations over and over, and each text is at most `OPERATION_LIMITS.tokens` long.
 */
const HELD = { documents: 1_000, textBytes: 4 * 1024 * 1024 };

/**
 * Refused documents held, apart from the valid ones so that a stream of different invalid texts
 * cannot push the valid ones out: a client that sends the same broken document again gets the same
 * errors without its text being parsed and validated again.
 */
const HELD_REFUSALS = { documents: 1_000, textCharacters: 1024 * 1024 };

/** What validation runs: graphql-js's rules and the limits. */
export const VALIDATION_RULES = [...specifiedRules, ...LIMIT_RULES];

/** A document's id: the lowercase hex SHA-256 of its text, as Apollo Server keys its document store and GraphQL Code Generator's client preset names trusted documents (`hashAlgorithm: 'sha256'`). */
export function documentIdOf(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * The document stage: a text parsed and validated once (with the limits), then its document, or
 * the errors refusing it, served from bounded caches. `/graphql` reaches the valid ones as Apollo
 * Server's `documentStore` (Apollo parses and validates with the same options and rules on a miss,
 * then stores a valid result here; it parses a refused text again each time); the REST table and
 * the pipeline's subscribe verb (every subscription door) through `document`.
 *
 * The same cache is where automatic persisted queries are registered (`registered`): a document
 * is held under the SHA-256 of its text, with its text (`loc.source`), so the hash alone names
 * it for as long as it is held. Nothing in it depends on the caller: what does (introspection,
 * `introspection.ts`) is checked for every operation.
 */
export class Documents {
  private readonly valid = new LRUCache<string, DocumentNode>({
    max: HELD.documents,
    maxSize: HELD.textBytes,
    sizeCalculation: (document) => Math.max(Buffer.byteLength(document.loc?.source.body ?? ''), 1),
  });
  private readonly refused = new LRUCache<string, { errors: readonly GraphQLError[]; length: number }>({
    max: HELD_REFUSALS.documents,
    maxSize: HELD_REFUSALS.textCharacters,
    sizeCalculation: (refusal) => Math.max(refusal.length, 1),
  });

  constructor(private readonly schema: GraphQLSchema) {}

  /**
   * The cache as Apollo Server's document store. Apollo prefixes each key with its schema's hash;
   * this process serves one schema for its whole life, so the key is the part after the prefix,
   * the same key the other doors use.
   */
  readonly store: DocumentStore = {
    get: async (key) => this.valid.get(withoutPrefix(key)),
    set: async (key, document) => {
      this.valid.set(withoutPrefix(key), document);
    },
    delete: async (key) => this.valid.delete(withoutPrefix(key)),
  };

  /**
   * The cache as Apollo Server's store of automatic persisted queries: the text held under a hash.
   * Registering is storing the document, which Apollo does once it is valid (`store.set`), so
   * `set` has nothing left to do; an invalid text is never registered.
   */
  readonly registered = {
    get: async (key: string): Promise<string | undefined> => this.textOf(withoutPrefix(key)),
    set: async (): Promise<void> => {},
    delete: async (key: string): Promise<boolean> => this.valid.delete(withoutPrefix(key)),
  };

  /** The text of the valid document held under `id` (its SHA-256), if it is still held. */
  textOf(id: string): string | undefined {
    return this.valid.get(id)?.loc?.source.body;
  }

  /**
   * The parsed and validated document of `text`, or why it is refused: the token limit while parsing
   * (`GRAPHQL_PARSE_FAILED`), then every validation rule (`GRAPHQL_VALIDATION_FAILED`), as Apollo
   * Server refuses them. `id` is `documentIdOf(text)`, for callers that know it already.
   */
  document(text: string, id = documentIdOf(text)): DocumentNode | readonly GraphQLError[] {
    const known = this.valid.get(id) ?? this.refused.get(id)?.errors;
    if (known !== undefined) return known;
    const checked = this.check(text);
    if ('kind' in checked) this.valid.set(id, checked);
    else this.refused.set(id, { errors: checked, length: text.length });
    return checked;
  }

  private check(text: string): DocumentNode | readonly GraphQLError[] {
    let document: DocumentNode;
    try {
      document = parse(text, PARSE_OPTIONS);
    } catch (error) {
      if (!(error instanceof GraphQLError)) throw error;
      return [
        new GraphQLError(error.message, { source: error.source, positions: error.positions, extensions: { code: 'GRAPHQL_PARSE_FAILED' } }),
      ];
    }
    const invalid = validate(this.schema, document, VALIDATION_RULES);
    return invalid.length > 0 ? invalid.map(validationFailure) : document;
  }
}

function withoutPrefix(key: string): string {
  return key.slice(key.lastIndexOf(':') + 1);
}

/** A validation error as Apollo Server answers it: with its code (in production, the error rendering hides what it says). */
function validationFailure(error: GraphQLError): GraphQLError {
  return new GraphQLError(error.message, { nodes: error.nodes, extensions: { ...error.extensions, code: 'GRAPHQL_VALIDATION_FAILED' } });
}
