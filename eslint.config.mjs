// ESLint (npm run lint): typescript-eslint's strict, type-checked rules over every TypeScript file.
// Rule choices that differ from the preset, each with its reason:
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import noPrivateProperty from './scripts/eslint-no-private-property.mjs';

const nodeGlobals = Object.fromEntries(
  [
    'process',
    'console',
    'Buffer',
    'URL',
    'URLSearchParams',
    'setTimeout',
    'clearTimeout',
    'setInterval',
    'clearInterval',
    'setImmediate',
    'fetch',
    'performance',
    'TextDecoder',
    'TextEncoder',
    'AbortController',
    'structuredClone',
    'globalThis',
  ].map((name) => [name, 'readonly']),
);

export default tseslint.config(
  { ignores: ['dist/', 'gateway/dist/', 'gateway/.tmp/', 'node_modules/', '.tmp/', 'src/generated/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // TypeScript itself reports undefined names, with the DOM or Node types each file has.
      'no-undef': 'off',
      // With noUncheckedIndexedAccess every indexed read may be undefined; `!` marks the reads
      // whose bounds the code has just checked (ring slots, regex groups, array heads).
      '@typescript-eslint/no-non-null-assertion': 'off',
      // Numbers and booleans in messages and URLs print as expected.
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true }],
      // `() => void promise` and `(x) => list.push(x)` shorthands are idiomatic here.
      '@typescript-eslint/no-confusing-void-expression': ['error', { ignoreArrowShorthand: true, ignoreVoidOperator: true }],
      // fastify handlers and hooks are async by contract, awaiting or not.
      '@typescript-eslint/require-await': 'off',
      // Data from CDP, the page script and the wire can break what its types promise (a field
      // the protocol says is always there, an array index): those checks are deliberate.
      '@typescript-eslint/no-unnecessary-condition': 'off',
      // pg returns BIGINT and COUNT columns as strings where the row types say number: the
      // Number() calls that convert them are needed at run time.
      '@typescript-eslint/no-unnecessary-type-conversion': 'off',
      // `const { a: _a, ...rest } = value` is how a copy without `a` is made.
      '@typescript-eslint/no-unused-vars': ['error', { ignoreRestSiblings: true }],
    },
  },
  {
    // Tests and the bench read untyped JSON off the wire and drive CDP with `any` results.
    files: ['test/**/*.ts', 'gateway/test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
  {
    files: ['**/*.mjs', '**/*.js'],
    extends: [tseslint.configs.disableTypeChecked],
    languageOptions: { globals: nodeGlobals },
  },
  {
    // No private fields of other packages (scripts/eslint-no-private-property.mjs).
    plugins: { local: noPrivateProperty },
    rules: {
      'local/no-private-property': [
        'error',
        { allow: ['_transferSize', '_error', '_resourceType', '_fromCache', '_fetchedViaServiceWorker', '_webSocketMessages'] },
      ],
    },
  },
);
