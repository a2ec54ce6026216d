// Shared jest settings: swc transform (same options as the build) and the `@restash/*` aliases.
const { join } = require('node:path');
const { root, paths, swcOptions } = require('./tools/swc-options.cjs');

const moduleNameMapper = Object.fromEntries(
  Object.entries(paths).map(([alias, [target]]) => [`^${alias}$`, join(root, target)]),
);

/**
 * @param {string} projectDir absolute path of the project
 * @param {'unit'|'integration'} kind unit tests are `*.spec.ts` beside the code; integration tests
 *   are `*.integration.spec.ts` and start real engines.
 */
function jestConfig(projectDir, kind) {
  return {
    displayName: `${relativeName(projectDir)}:${kind}`,
    rootDir: projectDir,
    testEnvironment: 'node',
    transform: { '^.+\\.ts$': ['@swc/jest', swcOptions({ withPaths: false })] },
    moduleNameMapper,
    testMatch: kind === 'unit' ? ['<rootDir>/src/**/*.spec.ts'] : ['<rootDir>/src/**/*.integration.spec.ts'],
    testPathIgnorePatterns: kind === 'unit' ? ['\\.integration\\.spec\\.ts$'] : [],
    testTimeout: kind === 'unit' ? 10_000 : 60_000,
    reporters: ['default', join(root, 'tools/jest-failure-log.cjs')],
  };
}

function relativeName(dir) {
  return dir.slice(root.length + 1);
}

module.exports = { jestConfig };
