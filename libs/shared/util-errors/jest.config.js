module.exports = require('../../../jest.preset.js').jestConfig(__dirname, 'unit');
