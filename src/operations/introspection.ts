import { type DocumentNode, type GraphQLSchema, NoSchemaIntrospectionCustomRule, validate } from 'graphql';

import { invalidOperation } from '../errors.js';
import type { OperationHook } from './hooks.js';

/**
 * Production's introspection rule, per caller: graphql-js's `NoSchemaIntrospectionCustomRule`
 * (what Apollo Server adds to validation with `introspection: false`), run for every operation of
 * a caller not in INTROSPECTION_USERS, whatever its door. It is kept out of validation because the
 * document cache holds one validation per text for every caller: a document validated for a
 * listed caller must not thereby pass for another. Whether a document introspects depends on the
 * document alone, so that much is remembered per cached document. A hook of the pipeline's own,
 * told of each operation before the operator's.
 */
export function introspectionRule(schema: GraphQLSchema, introspectionUsers: readonly number[]): OperationHook {
  const allowed = new Set(introspectionUsers);
  const refusals = new WeakMap<DocumentNode, string | null>();
  return {
    onOperation({ caller, document }) {
      if (allowed.has(caller.userId)) return;
      let refusal = refusals.get(document);
      if (refusal === undefined) {
        refusal = validate(schema, document, [NoSchemaIntrospectionCustomRule])[0]?.message ?? null;
        refusals.set(document, refusal);
      }
      if (refusal !== null) throw invalidOperation(refusal);
    },
  };
}
