import { join } from 'node:path';
import { runPytest } from '@restash/platform/util-stack';
import { type VectorStack, startVectorStack } from './testing/vector-stack';

/**
 * The official Python SDK `upstash-vector` (deploy/python/sdk-requirements.txt) against vector-gateway: the pytest
 * file src/python/test_upstash_vector.py, run on a DENSE index (the variables `Index.from_env()` reads), a SPARSE
 * one and a HYBRID one with the local embedding model and BM25. Its closing line (passed, failed) is printed.
 */
describe('upstash-vector (Python)', () => {
  let stack: VectorStack;

  beforeAll(async () => {
    stack = await startVectorStack({
      acme: [
        { name: 'dense', dimension: 2 },
        { name: 'sparse', type: 'SPARSE' },
        { name: 'text', type: 'HYBRID', dimension: 384, embedding: true, bm25: true },
      ],
    });
  }, 180_000);
  afterAll(() => stack?.stop());

  it('passes the pytest suite of its calls', async () => {
    const run = await runPytest('upstash-vector', join(__dirname, 'python', 'test_upstash_vector.py'), {
      UPSTASH_VECTOR_REST_URL: stack.url,
      UPSTASH_VECTOR_REST_TOKEN: stack.tokens('acme', 'dense').standard,
      RESTASH_SPARSE_URL: stack.url,
      RESTASH_SPARSE_TOKEN: stack.tokens('acme', 'sparse').standard,
      RESTASH_TEXT_URL: stack.url,
      RESTASH_TEXT_TOKEN: stack.tokens('acme', 'text').standard,
    });
    process.stdout.write(`upstash-vector (Python): ${run.summary}\n`);
    expect({ exitCode: run.exitCode, failed: run.failed, output: run.exitCode === 0 ? '' : run.output }).toEqual({ exitCode: 0, failed: 0, output: '' });
    expect(run.passed).toBeGreaterThan(5);
  }, 300_000);
});
