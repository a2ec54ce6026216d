// Template tests: `helm template`/`helm lint` of the chart, no cluster (tests/*.spec.ts).
const base = require('../../jest.preset.js').jestConfig(__dirname, 'unit');

module.exports = { ...base, testMatch: ['<rootDir>/tests/**/*.spec.ts'], testPathIgnorePatterns: ['\\.integration\\.spec\\.ts$'], testTimeout: 60_000 };
