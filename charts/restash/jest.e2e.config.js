// The chart on the real test cluster (e2e/*.e2e.spec.ts: helm install, resources, SDK Jobs, upgrade, uninstall).
const base = require('../../jest.preset.js').jestConfig(__dirname, 'e2e');

module.exports = { ...base, testMatch: ['<rootDir>/e2e/**/*.e2e.spec.ts'] };
