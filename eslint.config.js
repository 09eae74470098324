// @ts-check
import js from '@eslint/js';
import graphqlPlugin from '@graphql-eslint/eslint-plugin';
import prettier from 'eslint-config-prettier';
import simpleImportSort from 'eslint-plugin-simple-import-sort';
import globals from 'globals';
import tseslint from 'typescript-eslint';

const SCHEMA = 'schema/*.graphql';

/** GraphQL files, checked by @graphql-eslint against the schema in `schema/` and their sibling `documents`. */
function graphqlFiles(files, documents) {
  return {
    files,
    languageOptions: { parser: graphqlPlugin.parser, parserOptions: { graphQLConfig: { schema: SCHEMA, documents } } },
    plugins: { '@graphql-eslint': graphqlPlugin },
  };
}

/**
 * Sources, tests, the workspace packages, the examples, the schema and the operations kept in
 * `.graphql` files; generated code is checked by `npm run codegen -- --check`. The Relay app's
 * documents (test/clients/relay/app) use Relay's own directives and are checked by relay-compiler.
 */
export default tseslint.config(
  {
    ignores: ['**/dist/', '**/node_modules/', '.bench/', 'coverage/', '**/generated/', '**/__generated__/'],
  },
  {
    files: ['**/*.{js,mjs,cjs,ts,mts,cts,tsx}'],
    extends: [js.configs.recommended, ...tseslint.configs.recommended],
    languageOptions: { globals: globals.node },
    plugins: { 'simple-import-sort': simpleImportSort },
    rules: {
      'simple-import-sort/imports': 'error',
      'simple-import-sort/exports': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
      eqeqeq: ['error', 'always', { null: 'ignore' }],
      'no-console': 'error',
      'prefer-const': 'error',
    },
  },
  {
    // Command-line entry points print for the person who ran them.
    files: ['src/cli/**', 'packages/*/src/cli.ts'],
    rules: { 'no-console': 'off' },
  },
  {
    // Tests and benchmarks print their figures, and read JSON bodies of any shape.
    files: ['test/**', 'packages/*/test/**', 'packages/*/bench/**', 'packages/*/conformance/**'],
    rules: { 'no-console': 'off', '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    ...graphqlFiles([SCHEMA]),
    rules: {
      ...graphqlPlugin.configs['flat/schema-recommended'].rules,
      '@graphql-eslint/strict-id-in-types': [
        'error',
        {
          exceptions: {
            // Relay's conventions: a mutation's answer, a page of a connection, a place in one and
            // the page's bounds are made for one request and never fetched again; Relay's store keys
            // each by the field it answered (a connection also by its @connection key).
            suffixes: ['Payload', 'Connection', 'Edge'],
            types: [
              'PageInfo',
              // An element of its conversation's list, stored without an identity of its own (the chat
              // service writes the list); it is only ever fetched with its conversation.
              'Message',
              // The caller's certification flags, read from the SSO provider on every request.
              'GiftPackage',
              // An expected outcome inside a payload (a code and a sentence), not a thing of its own.
              'UserError',
              // One change, delivered once on a subscription; it names its conversation by `conversationId`.
              'ConversationEvent',
            ],
          },
        },
      ],
    },
  },
  {
    ...graphqlFiles(['src/rest/operations.graphql'], 'src/rest/operations.graphql'),
    rules: {
      ...graphqlPlugin.configs['flat/operations-recommended'].rules,
      // `id` lets a client's normalised cache merge objects; the REST layer keeps no cache (in
      // process or through the sidecar), and its bodies show the number, so a global id per row
      // would be computed and dropped.
      '@graphql-eslint/require-selections': 'off',
    },
  },
  {
    ...graphqlFiles(['examples/client/operations/*.graphql'], 'examples/client/operations/*.graphql'),
    rules: graphqlPlugin.configs['flat/operations-recommended'].rules,
  },
  prettier,
);
