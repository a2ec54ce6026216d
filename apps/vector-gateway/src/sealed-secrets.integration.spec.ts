import { type IncomingHttpHeaders, type Server, createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { RegistrySeal, registryKeys } from '@restash/shared/data-access-registry';
import { type HttpService, startHttpService } from '@restash/shared/util-http';
import { call } from '@restash/shared/util-testing';
import { type EmbedderLocal, LOCAL_MODEL, type QdrantLocal, type Stack, applyTenantFile, readTenantTokens, startStack } from '@restash/platform/util-stack';
import { AppModule } from './app.module';
import { loadVectorGatewayConfig } from './config';

/**
 * A loopback pass-through to a real engine that keeps one request header of every request (what the
 * gateway sent as the engine's key).
 */
async function startTap(target: string, header: string): Promise<{ origin: string; seen: Set<string>; close(): Promise<void> }> {
  const seen = new Set<string>();
  const upstream = new URL(target);
  const server: Server = createServer((req, res) => {
    seen.add(String(req.headers[header] ?? ''));
    const headers: IncomingHttpHeaders = { ...req.headers, host: upstream.host };
    const forward = request({ host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    forward.on('error', () => res.destroy());
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** Every value the control Redis holds (strings, hashes, sets), as one text. */
async function everything(redis: Redis): Promise<string> {
  const values: string[] = [];
  for (const key of await redis.keys('*')) {
    const type = await redis.type(key);
    if (type === 'string') values.push((await redis.get(key)) ?? '');
    else if (type === 'hash') values.push(JSON.stringify(await redis.hgetall(key)));
    else if (type === 'set') values.push(...(await redis.smembers(key)));
    else values.push(`${key}: ${type}`);
  }
  return values.join('\n');
}

/**
 * Issue 13: what a platform team provides (an external Redis URL with its password, the Qdrant API key, an embedding
 * provider's key) goes through the tenants command into the registry sealed under REGISTRY_SEAL_KEY, and
 * vector-gateway uses the opened values.
 */
describe('secrets a platform team provides', () => {
  // Letters and digits only: a base64 key may hold / and +, which a URL's password cannot carry unescaped.
  const password = `redis-pw-${RegistrySeal.generateKey().replace(/[^A-Za-z0-9]/g, '')}`;
  const qdrantKey = `qdrant-key-${RegistrySeal.generateKey()}`;
  const embeddingKey = `embedding-key-${RegistrySeal.generateKey()}`;
  let stack: Stack;
  let control: Redis;
  let qdrantTap: Awaited<ReturnType<typeof startTap>>;
  let embedderTap: Awaited<ReturnType<typeof startTap>>;
  let gateway: HttpService;
  let token: string;

  beforeAll(async () => {
    stack = await startStack({ from: 'source', qdrant: true, embedder: true });
    const qdrant = stack.qdrant as QdrantLocal;
    const embedder = stack.embedder as EmbedderLocal;
    [qdrantTap, embedderTap] = await Promise.all([startTap(qdrant.url, 'api-key'), startTap(embedder.url, 'authorization')]);
    const file = join(stack.stateDir, 'provided.yaml');
    const documents = [
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'provided', namespace: 'acme' }, stringData: { 'redis-url': `redis://gw:${password}@127.0.0.1:1/0`, 'embedding-key': embeddingKey } },
      {
        apiVersion: 'restash.dev/v1alpha1',
        kind: 'KvDatabase',
        metadata: { name: 'main', namespace: 'acme' },
        spec: { redis: { external: { urlSecretRef: { name: 'provided', key: 'redis-url' } } } },
      },
      {
        apiVersion: 'restash.dev/v1alpha1',
        kind: 'VectorIndex',
        metadata: { name: 'docs', namespace: 'acme' },
        spec: {
          dimension: 384,
          embedding: { model: LOCAL_MODEL, url: `${embedderTap.origin}${new URL(embedder.url).pathname}`, apiKeySecretRef: { name: 'provided', key: 'embedding-key' } },
        },
      },
    ];
    await writeFile(file, documents.map((d) => JSON.stringify(d)).join('\n---\n'), { mode: 0o600 });
    const secretsDir = join(stack.stateDir, 'secrets');
    await applyTenantFile(file, {
      controlRedisUrl: stack.control.url,
      from: 'source',
      secretsDir,
      env: { REGISTRY_SEAL_KEY: stack.registrySealKey, QDRANT_URL: qdrantTap.origin, QDRANT_API_KEY: qdrantKey },
    });
    token = (await readTenantTokens(secretsDir, 'acme')).vector.docs?.standard as string;
    control = new Redis(stack.control.url);
    const config = loadVectorGatewayConfig({
      CONTROL_REDIS_URL: stack.control.url,
      REGISTRY_SEAL_KEY: stack.registrySealKey,
      HOST: '127.0.0.1',
      PORT: '0',
      MANAGEMENT_PORT: '0',
      LOG_LEVEL: 'fatal',
      EMBEDDING_ALLOWLIST: '127.0.0.0/8', // the index names its own provider (the tap, on loopback)
    });
    gateway = await startHttpService(AppModule.forRoot(config), config.http);
  }, 180_000);

  afterAll(async () => {
    await gateway?.close();
    control?.disconnect();
    await Promise.all([qdrantTap?.close(), embedderTap?.close()]);
    await stack?.stop();
  });

  it('the registry holds none of them in plain text, only sealed', async () => {
    const stored = await everything(control);
    expect(stored).toContain('acme.docs'); // the records are there
    for (const secret of [password, qdrantKey, embeddingKey]) expect(stored).not.toContain(secret);
    const kv = JSON.parse((await control.get(registryKeys.kvDatabase('acme.main'))) as string) as { redisUrl: string };
    const index = JSON.parse((await control.get(registryKeys.vectorIndex('acme.docs'))) as string) as { qdrantApiKey: string; embedder: { apiKey: string } };
    for (const sealed of [kv.redisUrl, index.qdrantApiKey, index.embedder.apiKey]) expect(sealed).toMatch(/^sealed:v1:[A-Za-z0-9+/]+=*$/);
  });

  it('vector-gateway sends the opened keys to Qdrant and to the embedding provider', async () => {
    const upserted = await call(`${gateway.url}/upsert-data`, { method: 'POST', token, body: [{ id: 'a', data: 'hello sealed world' }] });
    expect(upserted).toMatchObject({ status: 200, body: { result: 'Success' } });
    const found = await call(`${gateway.url}/query-data`, { method: 'POST', token, body: { data: 'hello', topK: 1 } });
    expect(found).toMatchObject({ status: 200, body: { result: [{ id: 'a' }] } });
    expect([...embedderTap.seen]).toEqual([`Bearer ${embeddingKey}`]);
    expect([...qdrantTap.seen]).toEqual([qdrantKey]);
  });

  it('a gateway given another REGISTRY_SEAL_KEY answers 503 (registry unavailable) for the index, and keeps serving', async () => {
    const config = loadVectorGatewayConfig({
      CONTROL_REDIS_URL: stack.control.url,
      REGISTRY_SEAL_KEY: RegistrySeal.generateKey(),
      HOST: '127.0.0.1',
      PORT: '0',
      MANAGEMENT_PORT: '0',
      LOG_LEVEL: 'fatal',
    });
    const stranger = await startHttpService(AppModule.forRoot(config), config.http);
    try {
      for (let i = 0; i < 2; i++) {
        const answer = await call(`${stranger.url}/info`, { token });
        expect(answer).toMatchObject({ status: 503, body: { error: 'Service unavailable: the platform registry cannot be reached; retry later' } });
      }
      expect((await call(`${stranger.url}/info`, { token: 'unknown-token' })).status).toBe(401);
      expect((await fetch(`${stranger.managementUrl}/healthz`)).status).toBe(200);
    } finally {
      await stranger.close();
    }
  });
});
