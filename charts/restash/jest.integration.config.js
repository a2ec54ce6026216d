// The chart on the real test cluster (e2e/*.integration.spec.ts: helm install, resources, SDK Jobs, upgrade, uninstall).
const base = require('../../jest.preset.js').jestConfig(__dirname, 'integration');

module.exports = { ...base, testMatch: ['<rootDir>/e2e/**/*.integration.spec.ts'] };
