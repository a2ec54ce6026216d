import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type EmbedderLocal, LOCAL_MODEL, freePort, startEmbedderLocal } from '@restash/platform/util-stack';
import { EmbedderError, OpenAiEmbedder } from './embedder';

function cosine(a: number[], b: number[]): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return dot / Math.sqrt(na * nb);
}

describe('OpenAiEmbedder against embedder-local (all-MiniLM-L6-v2, OpenAI-compatible)', () => {
  let server: EmbedderLocal;
  let embedder: OpenAiEmbedder;

  beforeAll(async () => {
    server = await startEmbedderLocal();
    embedder = new OpenAiEmbedder({ url: `${server.url}/`, model: LOCAL_MODEL, timeoutMs: 30_000 });
  });

  afterAll(async () => {
    await server?.stop();
  });

  it('answers one 384-d unit vector per text, in input order', async () => {
    const texts = ['a cat sleeps on the sofa', 'quarterly tax filing deadline', 'a kitten naps on the couch', 'a cat sleeps on the sofa'];
    const vectors = await embedder.embed(texts);
    expect(vectors).toHaveLength(4);
    for (const v of vectors) {
      expect(v).toHaveLength(384);
      expect(Math.hypot(...v)).toBeCloseTo(1, 3);
    }
    expect(cosine(vectors[0], vectors[3])).toBeCloseTo(1, 5);
    expect(cosine(vectors[0], vectors[2])).toBeGreaterThan(cosine(vectors[0], vectors[1]) + 0.3);
  });

  it('splits more than 256 texts into several provider requests and keeps their order', async () => {
    const distinct = ['first sentence about rivers', 'second sentence about taxes', 'third sentence about music'];
    const singles = await embedder.embed(distinct);
    const texts = Array.from({ length: 300 }, (_, i) => distinct[i % 3]);
    const vectors = await embedder.embed(texts);
    expect(vectors).toHaveLength(300);
    vectors.forEach((v, i) => expect(cosine(v, singles[i % 3])).toBeGreaterThan(0.9999));
  });

  it("reports the provider's refusal with its status and message", async () => {
    const refusal = embedder.embed(['fine', 'lone surrogate \ud800']);
    await expect(refusal).rejects.toBeInstanceOf(EmbedderError);
    await expect(refusal).rejects.toMatchObject({ status: 400, message: expect.stringContaining('lone UTF-16 surrogate') });
  });

  it('reports an unreachable provider without a status', async () => {
    const nowhere = new OpenAiEmbedder({ url: `http://127.0.0.1:${await freePort()}/v1`, model: LOCAL_MODEL, timeoutMs: 5_000 });
    const failure = nowhere.embed(['text']);
    await expect(failure).rejects.toBeInstanceOf(EmbedderError);
    await expect(failure).rejects.toMatchObject({ status: undefined, message: expect.stringContaining('unreachable') });
  });
});

describe('OpenAiEmbedder against a provider answering malformed embeddings', () => {
  let server: Server;
  let url: string;
  /** What the stub answers for every input: `{data: [{index, embedding}]}` with this embedding. */
  let embedding: unknown = [];
  /** Whether the stub sends its answer chunked (no Content-Length). */
  let chunked = false;

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
      req.on('end', () => {
        const input = (JSON.parse(body) as { input: string[] }).input;
        res.writeHead(200, { 'content-type': 'application/json' });
        const json = JSON.stringify({ object: 'list', data: input.map((_, index) => ({ index, embedding })) });
        if (chunked) res.write(json.slice(0, 10));
        res.end(chunked ? json.slice(10) : json);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });

  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('refuses an embedding whose components are not numbers, as an unusable answer without a status', async () => {
    embedding = ['a', 'b', 'c', 'd'];
    const failure = new OpenAiEmbedder({ url, model: 'stub', timeoutMs: 5_000 }).embed(['text']);
    await expect(failure).rejects.toBeInstanceOf(EmbedderError);
    await expect(failure).rejects.toMatchObject({ status: undefined, message: expect.stringContaining('not an array of numbers') });
  });

  it('stops reading an answer past its limit, declared or streamed, as an unusable answer', async () => {
    embedding = Array.from({ length: 1000 }, () => 0.5);
    const small = new OpenAiEmbedder({ url, model: 'stub', timeoutMs: 5_000 }, 4096);
    for (const streamed of [false, true]) {
      chunked = streamed;
      await expect(small.embed(['a'])).resolves.toEqual([embedding]);
      const failure = small.embed(['a', 'b', 'c']);
      await expect(failure).rejects.toBeInstanceOf(EmbedderError);
      await expect(failure).rejects.toMatchObject({ status: undefined, message: 'embedding provider answered more than 4096 bytes' });
    }
    chunked = false;
  });

  it('hands numbers on as the provider sent them (range and length are the caller\'s checks)', async () => {
    embedding = [1e39, 1, 1, 1];
    await expect(new OpenAiEmbedder({ url, model: 'stub', timeoutMs: 5_000 }).embed(['a', 'b'])).resolves.toEqual([embedding, embedding]);
  });
});
