// The benchmarks' pure helpers (lib/*.spec.mjs, native ES modules): no stack, no engine.
const base = require('../jest.preset.js').jestConfig(__dirname, 'unit');

module.exports = { ...base, testMatch: ['<rootDir>/lib/**/*.spec.mjs'] };
