// @ts-check
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import simpleImportSort from 'eslint-plugin-simple-import-sort';
import globals from 'globals';
import tseslint from 'typescript-eslint';

/** Sources, tests, the workspace packages and the examples; generated code is checked by `npm run codegen -- --check`. */
export default tseslint.config(
  {
    ignores: ['**/dist/', '**/node_modules/', '.bench/', 'coverage/', '**/generated/', '**/__generated__/'],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
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
  prettier,
);
