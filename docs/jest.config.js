// The docs' generated parts (tools/*.spec.ts): pure, no engine.
const base = require('../jest.preset.js').jestConfig(__dirname, 'unit');

module.exports = { ...base, testMatch: ['<rootDir>/tools/**/*.spec.ts'] };
