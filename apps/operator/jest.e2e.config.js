module.exports = require('../../jest.preset.js').jestConfig(__dirname, 'e2e');
