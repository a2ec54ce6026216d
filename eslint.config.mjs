// Lint rules for the whole workspace. `@nx/enforce-module-boundaries` keeps the two tag axes
// honest: scope (which API a project belongs to) and type
// (app → feature → data-access → util). `type:testing` (libs/shared/util-testing) is for tests
// only: specs and `testing/` folders may import it, production code may not, nor a `testing/`
// folder or a spec (tools/build.mjs refuses the same imports when it builds an app).
import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

/** Test code: what may import `type:testing` projects and `testing/` folders. */
const testFiles = ['**/*.spec.ts', '**/testing/**/*.ts', 'libs/shared/util-testing/**/*.ts'];

/**
 * The module-boundary rule; test code may also depend on `type:testing` projects, of any scope (the
 * stack launcher, libs/platform/util-stack, starts the engines of every API's tests).
 */
function boundaries({ test, allow = [] }) {
  const types = (...allowed) => (test ? [...allowed, 'type:testing'] : allowed);
  const scopes = types;
  return [
    'error',
    {
      enforceBuildableLibDependency: false,
      allow,
      depConstraints: [
        { sourceTag: 'scope:shared', onlyDependOnLibsWithTags: scopes('scope:shared') },
        { sourceTag: 'scope:kv', onlyDependOnLibsWithTags: scopes('scope:kv', 'scope:shared') },
        { sourceTag: 'scope:vector', onlyDependOnLibsWithTags: scopes('scope:vector', 'scope:shared') },
        { sourceTag: 'scope:stream', onlyDependOnLibsWithTags: scopes('scope:stream', 'scope:shared') },
        { sourceTag: 'scope:queue', onlyDependOnLibsWithTags: scopes('scope:queue', 'scope:shared') },
        { sourceTag: 'scope:operator', onlyDependOnLibsWithTags: scopes('scope:operator', 'scope:shared') },
        {
          sourceTag: 'scope:platform',
          onlyDependOnLibsWithTags: ['scope:platform', 'scope:shared', 'scope:kv', 'scope:vector', 'scope:stream', 'scope:queue', 'scope:operator'],
        },
        { sourceTag: 'type:app', onlyDependOnLibsWithTags: types('type:feature', 'type:data-access', 'type:util') },
        { sourceTag: 'type:feature', onlyDependOnLibsWithTags: types('type:data-access', 'type:util') },
        { sourceTag: 'type:data-access', onlyDependOnLibsWithTags: types('type:data-access', 'type:util') },
        { sourceTag: 'type:util', onlyDependOnLibsWithTags: types('type:util') },
        { sourceTag: 'type:testing', onlyDependOnLibsWithTags: ['type:feature', 'type:data-access', 'type:util', 'type:testing'] },
        { sourceTag: 'type:e2e', onlyDependOnLibsWithTags: ['type:app', 'type:feature', 'type:data-access', 'type:util', 'type:testing'] },
      ],
    },
  ];
}

export default [
  { ignores: ['**/dist', '**/node_modules', '**/.nx', '**/coverage', '.restash/**', '.cache/**'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    plugins: { '@nx': nx },
    rules: {
      '@nx/enforce-module-boundaries': boundaries({ test: false }),
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '(^|/)testing(/|$)|\\.spec$', message: 'test code (a testing/ folder, a spec) is not importable from production code' }] },
      ],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'error',
    },
  },
  {
    // CommonJS configuration files (jest, swc options).
    files: ['**/*.js', '**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { require: 'readonly', module: 'writable', __dirname: 'readonly', process: 'readonly' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    files: testFiles,
    rules: { '@nx/enforce-module-boundaries': boundaries({ test: true }), 'no-restricted-imports': 'off' },
  },
  {
    // The chart's tests (type:e2e) check its Deployments against each app's env schema, and docs/tools (type:e2e)
    // writes docs/configuration.md's tables from them: both import apps/<app>/src/config.ts, which Nx otherwise
    // refuses (apps are not importable, nor by relative path).
    files: ['charts/restash/tests/**/*.ts', 'docs/tools/**/*.ts'],
    rules: { '@nx/enforce-module-boundaries': boundaries({ test: true, allow: ['^(\\.\\./)+apps/[a-z-]+/src/config$'] }) },
  },
  {
    files: ['**/*.spec.ts', 'tools/**', 'bench/**', 'apps/tenants-cli/**'],
    rules: { 'no-console': 'off' },
  },
];
