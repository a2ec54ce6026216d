import { join } from 'node:path';
import { runPytest } from '@restash/platform/util-stack';
import { type QueueStack, startQueueStack } from './testing/queue-stack';

/**
 * The official Python SDK `qstash` (deploy/python/sdk-requirements.txt) against queue-gateway and queue-worker: the
 * pytest file src/python/test_qstash.py, run with the project's URL, token and signing keys in the variables the SDK
 * and its Receiver read; its destinations are a local HTTP server of the pytest process. Its closing line (passed,
 * failed) is printed.
 */
describe('qstash (Python)', () => {
  let stack: QueueStack;

  beforeAll(async () => {
    stack = await startQueueStack({ acme: [{ name: 'py' }] });
  }, 120_000);
  afterAll(() => stack?.stop());

  it('passes the pytest suite of its calls', async () => {
    const secrets = stack.secrets('acme', 'py');
    const run = await runPytest('qstash', join(__dirname, 'python', 'test_qstash.py'), {
      QSTASH_URL: stack.url,
      QSTASH_TOKEN: secrets.token,
      QSTASH_CURRENT_SIGNING_KEY: secrets.currentSigningKey,
      QSTASH_NEXT_SIGNING_KEY: secrets.nextSigningKey,
    });
    process.stdout.write(`qstash (Python): ${run.summary}\n`);
    expect({ exitCode: run.exitCode, failed: run.failed, output: run.exitCode === 0 ? '' : run.output }).toEqual({ exitCode: 0, failed: 0, output: '' });
    expect(run.passed).toBeGreaterThan(5);
  }, 300_000);
});
