#!/usr/bin/env node
// `make conformance` (docs/compatibility.md): the tests that drive each official SDK against the local stack, run
// apart from the rest of the integration tests, with a count per SDK and version. Each row is a jest integration
// spec of the app the SDK talks to (the JavaScript SDKs) or the pytest suite such a spec runs (the Python SDKs).
// The official suites themselves live in the SDKs' repositories, which this workplace cannot fetch: see
// docs/compatibility.md for how to run them against `make dev`.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const npmVersion = (name) => (pkg.dependencies?.[name] ?? pkg.devDependencies?.[name] ?? '?').replace(/^[~^]/, '');
const pyVersion = (name) => readFileSync(join(root, 'deploy/python/sdk-requirements.txt'), 'utf8').match(new RegExp(`^${name}==(\\S+)`, 'm'))?.[1] ?? '?';

/**
 * Per app, its SDK-facing specs and the SDK each exercises; a Python SDK's row counts its pytest tests (the report
 * runPytest writes); a row with a fourth element counts the tests of the spec's top describe blocks whose title starts
 * with it (one spec that drives several SDKs).
 */
const SUITES = [
  {
    app: 'kv-gateway',
    specs: [
      ['sdk.integration', `@upstash/redis ${npmVersion('@upstash/redis')}`],
      ['sdk-commands.integration', `@upstash/redis ${npmVersion('@upstash/redis')}`],
      ['sdk-hash-ttl.integration', `@upstash/redis ${npmVersion('@upstash/redis')}`],
      ['sdk-json.integration', `@upstash/redis ${npmVersion('@upstash/redis')}`],
      ['sdk-streams.integration', `@upstash/redis ${npmVersion('@upstash/redis')}`],
      ['search.integration', `@upstash/redis ${npmVersion('@upstash/redis')} (search)`],
      ['read-your-writes.integration', `@upstash/redis ${npmVersion('@upstash/redis')}`],
      ['upstash-behaviour.integration', `@upstash/redis ${npmVersion('@upstash/redis')}`],
      ['sdk-libraries.integration', `@upstash/ratelimit ${npmVersion('@upstash/ratelimit')}`, undefined, '@upstash/ratelimit'],
      ['sdk-libraries.integration', `@upstash/lock ${npmVersion('@upstash/lock')}`, undefined, '@upstash/lock'],
      ['sdk-libraries.integration', `@upstash/realtime ${npmVersion('@upstash/realtime')}`, undefined, '@upstash/realtime'],
      ['python-sdk.integration', `upstash-redis ${pyVersion('upstash-redis')} (Python)`, 'upstash-redis'],
    ],
  },
  {
    app: 'vector-gateway',
    specs: [
      ['sdk.integration', `@upstash/vector ${npmVersion('@upstash/vector')}`],
      ['sdk-sparse-hybrid.integration', `@upstash/vector ${npmVersion('@upstash/vector')}`],
      ['sdk-search.integration', `@upstash/search ${npmVersion('@upstash/search')}`],
      ['sdk-semantic-cache.integration', `@upstash/semantic-cache ${npmVersion('@upstash/semantic-cache')}`],
      ['python-sdk.integration', `upstash-vector ${pyVersion('upstash-vector')} (Python)`, 'upstash-vector'],
    ],
  },
  { app: 'stream-gateway', specs: [['sdk.integration', `@upstash/kafka ${npmVersion('@upstash/kafka')}`]] },
  {
    app: 'queue-gateway',
    specs: [
      ['sdk-suite.integration', `@upstash/qstash ${npmVersion('@upstash/qstash')}`],
      ['sdk.integration', `@upstash/qstash ${npmVersion('@upstash/qstash')}`],
      ['python-sdk.integration', `qstash ${pyVersion('qstash')} (Python)`, 'qstash'],
    ],
  },
];

const out = mkdtempSync(join(tmpdir(), 'restash-conformance-'));
const rows = [];
try {
  for (const { app, specs } of SUITES) {
    const file = join(out, `${app}.json`);
    const patterns = specs.map(([spec]) => `src/${spec.replace('.', '\\.')}\\.spec\\.ts$`);
    const run = spawnSync('npx', ['jest', '--config', `apps/${app}/jest.integration.config.js`, '--runInBand', '--json', `--outputFile=${file}`, ...patterns], {
      cwd: root,
      stdio: ['ignore', 'inherit', 'inherit'],
      env: { ...process.env, CONFORMANCE_REPORT_DIR: out, NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --experimental-vm-modules --disable-warning=ExperimentalWarning` },
    });
    let report;
    try {
      report = JSON.parse(readFileSync(file, 'utf8'));
    } catch {
      rows.push({ app, spec: '(all)', sdk: '-', passed: 0, failed: 1, skipped: 0, note: `jest exited ${run.status} without a report` });
      continue;
    }
    for (const [spec, sdk, pytest, describe] of specs) {
      const result = report.testResults.find((r) => r.name.endsWith(`/src/${spec}.spec.ts`));
      const tests = (result?.assertionResults ?? []).filter((t) => !describe || (t.ancestorTitles[0] ?? '').startsWith(describe));
      const count = (status) => tests.filter((t) => t.status === status).length;
      const row = { app, spec, sdk, passed: count('passed'), failed: result ? count('failed') + (result.status === 'failed' && tests.length === 0 ? 1 : 0) : 1, skipped: count('pending') + count('skipped'), note: result ? '' : 'not run' };
      if (pytest && existsSync(join(out, `${pytest}.json`))) Object.assign(row, JSON.parse(readFileSync(join(out, `${pytest}.json`), 'utf8')), { note: 'pytest tests' });
      rows.push(row);
    }
  }
} finally {
  rmSync(out, { recursive: true, force: true });
}

console.log('\nconformance: the official SDKs against the local stack');
console.log(`${'SDK'.padEnd(36)} ${'spec'.padEnd(48)} passed failed skipped`);
for (const r of rows) {
  console.log(`${r.sdk.padEnd(36)} ${`${r.app}/${r.spec}`.padEnd(48)} ${String(r.passed).padStart(6)} ${String(r.failed).padStart(6)} ${String(r.skipped).padStart(7)}${r.note ? `  ${r.note}` : ''}`);
}
const total = (key) => rows.reduce((sum, r) => sum + r[key], 0);
console.log(`conformance: ${total('passed')} passed, ${total('failed')} failed, ${total('skipped')} skipped`);
process.exit(total('failed') === 0 ? 0 : 1);
