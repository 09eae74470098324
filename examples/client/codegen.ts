import type { CodegenConfig } from '@graphql-codegen/cli';

/**
 * How a client project generates its trusted documents: GraphQL Code Generator's client preset
 * with `persistedDocuments` writes `persisted-documents.json` (document id → text) beside the typed
 * operations. The gateway loads that file with PERSISTED_DOCUMENTS=…/persisted-documents.json.
 *
 *   npx graphql-codegen --config examples/client/codegen.ts
 */
const config: CodegenConfig = {
  // A client would point at the gateway's schema (its SDL files, or a development gateway's introspection).
  schema: 'schema/*.graphql',
  documents: 'examples/client/operations/*.graphql',
  generates: {
    'examples/client/generated/': {
      preset: 'client',
      presetConfig: {
        // Ids are the SHA-256 of each document's text, as the gateway computes them for its own operations.
        persistedDocuments: { hashAlgorithm: 'sha256' },
      },
    },
  },
};

export default config;
