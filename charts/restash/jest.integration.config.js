// Template tests: `helm template`/`helm lint` of the chart with the test cluster's helm, no cluster (tests/*.integration.spec.ts).
const base = require('../../jest.preset.js').jestConfig(__dirname, 'integration');

module.exports = { ...base, testMatch: ['<rootDir>/tests/**/*.integration.spec.ts'] };
