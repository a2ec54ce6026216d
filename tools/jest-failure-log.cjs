// A jest reporter that appends each failed test (project, file, name, the first lines of its error) to the
// file named by RESTASH_TEST_FAILURES, so that `make unit` and `make integration` can print every failure of
// a long multi-project run at its end, where CI's tail shows it (the `✕ ` lines, the names, come last).
// Does nothing without the variable.
const { appendFileSync } = require('node:fs');
const { relative } = require('node:path');
const { root } = require('./swc-options.cjs');

const MAX_LINES = 30;

/** Jest reporter (the `onTestResult` hook); writes nothing when RESTASH_TEST_FAILURES is unset. */
class FailureLogReporter {
  onTestResult(test, result) {
    const file = process.env.RESTASH_TEST_FAILURES;
    if (!file) return;
    const where = `${test.context.config.displayName?.name ?? ''} ${relative(root, result.testFilePath)}`;
    const entries = [];
    if (result.testExecError) entries.push(`✕ ${where}: the suite did not run\n${excerpt(result.testExecError.message)}`);
    for (const assertion of result.testResults) {
      if (assertion.status !== 'failed') continue;
      entries.push(`✕ ${where} › ${assertion.fullName}\n${excerpt(assertion.failureMessages.join('\n'))}`);
    }
    if (entries.length > 0) appendFileSync(file, `${entries.join('\n\n')}\n\n`);
  }
}

function excerpt(text) {
  const lines = text
    .replace(/\u001b\[[0-9;]*m/g, '')
    .split('\n')
    .filter((line) => line.trim() !== '' && !/^\s+at .*(node_modules|<anonymous>|node:internal)/.test(line));
  const kept = lines.slice(0, MAX_LINES).map((line) => `    ${line}`);
  if (lines.length > MAX_LINES) kept.push(`    … ${lines.length - MAX_LINES} more lines`);
  return kept.join('\n');
}

module.exports = FailureLogReporter;
