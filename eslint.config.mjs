// Lint rules for the whole workspace. `@nx/enforce-module-boundaries` keeps the two tag axes of
// reference/style-anchors.md §6.1 honest: scope (which API a project belongs to) and type
// (app → feature → data-access → util).
import nx from '@nx/eslint-plugin';
import tseslint from 'typescript-eslint';

export default [
  { ignores: ['**/dist', '**/node_modules', '**/.nx', '**/coverage', '.restash/**', '.cache/**'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    plugins: { '@nx': nx },
    rules: {
      '@nx/enforce-module-boundaries': [
        'error',
        {
          enforceBuildableLibDependency: false,
          allow: [],
          depConstraints: [
            { sourceTag: 'scope:shared', onlyDependOnLibsWithTags: ['scope:shared'] },
            { sourceTag: 'scope:kv', onlyDependOnLibsWithTags: ['scope:kv', 'scope:shared'] },
            { sourceTag: 'scope:vector', onlyDependOnLibsWithTags: ['scope:vector', 'scope:shared'] },
            { sourceTag: 'scope:stream', onlyDependOnLibsWithTags: ['scope:stream', 'scope:shared'] },
            { sourceTag: 'scope:queue', onlyDependOnLibsWithTags: ['scope:queue', 'scope:shared'] },
            {
              sourceTag: 'scope:platform',
              onlyDependOnLibsWithTags: ['scope:platform', 'scope:shared', 'scope:kv', 'scope:vector', 'scope:stream', 'scope:queue'],
            },
            { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['type:feature', 'type:data-access', 'type:util'] },
            { sourceTag: 'type:feature', onlyDependOnLibsWithTags: ['type:data-access', 'type:util'] },
            { sourceTag: 'type:data-access', onlyDependOnLibsWithTags: ['type:data-access', 'type:util'] },
            { sourceTag: 'type:util', onlyDependOnLibsWithTags: ['type:util'] },
          ],
        },
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
    files: ['**/*.spec.ts', 'tools/**', 'bench/**', 'apps/tenants-cli/**'],
    rules: { 'no-console': 'off' },
  },
];
