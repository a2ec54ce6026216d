// Shared jest settings: swc transform (same options as the build) and the `@restash/*` aliases.
const { join } = require('node:path');
const { root, paths, swcOptions } = require('./tools/swc-options.cjs');

const moduleNameMapper = Object.fromEntries(
  Object.entries(paths).map(([alias, [target]]) => [`^${alias}$`, join(root, target)]),
);

/**
 * The test tiers (docs/development.md, "Test tiers"): `unit` is `*.spec.ts` beside the code, pure (no engine, no helm, no cluster);
 * `integration` is `*.integration.spec.ts`, starting real engines and tools; `e2e` is `*.e2e.spec.ts`, on the
 * test cluster.
 * @param {string} projectDir absolute path of the project
 * @param {'unit'|'integration'|'e2e'} kind
 */
function jestConfig(projectDir, kind) {
  const match = { unit: '<rootDir>/src/**/*.spec.ts', integration: '<rootDir>/src/**/*.integration.spec.ts', e2e: '<rootDir>/src/**/*.e2e.spec.ts' };
  return {
    displayName: `${relativeName(projectDir)}:${kind}`,
    rootDir: projectDir,
    testEnvironment: 'node',
    transform: { '^.+\\.ts$': ['@swc/jest', swcOptions({ withPaths: false })] },
    moduleNameMapper,
    testMatch: [match[kind]],
    testPathIgnorePatterns: kind === 'unit' ? ['\\.(integration|e2e)\\.spec\\.ts$'] : [],
    testTimeout: kind === 'unit' ? 10_000 : 60_000,
    reporters: ['default', join(root, 'tools/jest-failure-log.cjs')],
  };
}

function relativeName(dir) {
  return dir.slice(root.length + 1);
}

module.exports = { jestConfig };
