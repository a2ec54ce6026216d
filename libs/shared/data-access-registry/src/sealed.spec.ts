import { ConfigError } from '@restash/shared/util-config';
import type { KvDatabaseRecord, RetiredResource, StreamClusterRecord, VectorIndexRecord } from './records';
import { REGISTRY_SEAL_KEY, RegistrySeal, SEALED_PREFIX, SealError, registrySealFromEnv } from './sealed';

const limits = { maxRequestBytes: 1024, dailyRequestLimit: 0 };
const kv: KvDatabaseRecord = { id: 'acme.main', tenant: 'acme', name: 'main', redisUrl: 'redis://gw:s3cret-pass@redis.acme:6379/0', ...limits, durability: 'async' };
const vector: VectorIndexRecord = {
  id: 'acme.docs',
  tenant: 'acme',
  name: 'docs',
  dimension: 3,
  similarityFunction: 'COSINE',
  indexType: 'DENSE',
  qdrantUrl: 'http://qdrant:6333',
  qdrantApiKey: 'qdrant-key-123',
  collection: 'restash.acme.docs',
  embedder: { url: 'http://embed:8000/v1', model: 'm', apiKey: 'sk-embed-456' },
  ...limits,
};

describe('RegistrySeal', () => {
  const seal = new RegistrySeal(RegistrySeal.generateKey());

  it('seals into sealed:v1:<base64 iv|tag|ciphertext>, differently each time, and opens back', () => {
    const a = seal.seal('p@ss wörd');
    const b = seal.seal('p@ss wörd');
    expect(a).toMatch(/^sealed:v1:[A-Za-z0-9+/]+=*$/);
    expect(a).not.toBe(b);
    expect(a).not.toContain('p@ss');
    // 12-byte iv, 16-byte tag, then the ciphertext (as long as the UTF-8 plain text).
    expect(Buffer.from(a.slice(SEALED_PREFIX.length), 'base64')).toHaveLength(12 + 16 + Buffer.byteLength('p@ss wörd'));
    expect(seal.open(a)).toBe('p@ss wörd');
    expect(seal.open(b)).toBe('p@ss wörd');
    expect(seal.open(seal.seal(''))).toBe('');
  });

  it('refuses a value sealed under another key', () => {
    expect(() => new RegistrySeal(RegistrySeal.generateKey()).open(seal.seal('x'))).toThrow(SealError);
  });

  it.each([
    ['a ciphertext byte', 30],
    ['a tag byte', 14],
    ['an iv byte', 0],
  ])('refuses a sealed value with %s changed', (_, at) => {
    const raw = Buffer.from(seal.seal('secret value').slice(SEALED_PREFIX.length), 'base64');
    raw[at] ^= 1;
    expect(() => seal.open(`${SEALED_PREFIX}${raw.toString('base64')}`)).toThrow(SealError);
  });

  it('refuses a cut, empty or plain value', () => {
    const sealed = seal.seal('secret value');
    expect(() => seal.open(sealed.slice(0, -4))).toThrow(SealError);
    expect(() => seal.open(`${SEALED_PREFIX}${Buffer.alloc(20).toString('base64')}`)).toThrow(SealError);
    expect(() => seal.open(SEALED_PREFIX)).toThrow(SealError);
    expect(() => seal.open('redis://gw:s3cret-pass@redis.acme:6379/0')).toThrow('not a sealed value');
  });

  it('refuses a key that is not 32 bytes of base64', () => {
    expect(() => new RegistrySeal(Buffer.alloc(16).toString('base64'))).toThrow(SealError);
    expect(() => new RegistrySeal(Buffer.alloc(32).toString('hex'))).toThrow(SealError);
  });

  it("seals exactly a record's user-provided secrets, and opens them back", () => {
    const sealedKv = seal.sealRecord('kv', kv);
    expect(sealedKv).toEqual({ ...kv, redisUrl: expect.stringMatching(/^sealed:v1:/) });
    expect(seal.openRecord('kv', sealedKv)).toEqual(kv);

    const sealedVector = seal.sealRecord('vector', vector);
    expect(sealedVector).toEqual({
      ...vector,
      qdrantApiKey: expect.stringMatching(/^sealed:v1:/),
      embedder: { url: vector.embedder?.url, model: 'm', apiKey: expect.stringMatching(/^sealed:v1:/) },
    });
    expect(JSON.stringify(sealedVector)).not.toMatch(/qdrant-key-123|sk-embed-456/);
    expect(seal.openRecord('vector', sealedVector)).toEqual(vector);

    // Without keys nothing is added; stream clusters and queue projects hold no user secret.
    const { qdrantApiKey: _, embedder: __, ...bare } = vector;
    expect(seal.sealRecord('vector', bare)).toEqual(bare);
    const stream: StreamClusterRecord = { id: 'acme.s', tenant: 'acme', name: 's', brokers: ['k:9092'], prefix: 'restash.acme.s.', topics: {}, ...limits };
    expect(seal.sealRecord('stream', stream)).toEqual(stream);

    const retired: RetiredResource = { api: 'kv', record: kv };
    expect(seal.openResource(seal.sealResource(retired))).toEqual(retired);
    expect(() => seal.openRecord('kv', kv)).toThrow(SealError); // a plain value where a sealed one belongs
  });
});

describe('registrySealFromEnv', () => {
  it('reads REGISTRY_SEAL_KEY', () => {
    const key = RegistrySeal.generateKey();
    const sealed = new RegistrySeal(key).seal('x');
    expect(registrySealFromEnv({ [REGISTRY_SEAL_KEY]: key }).open(sealed)).toBe('x');
  });

  it('names the variable when it is missing or malformed', () => {
    for (const env of [{}, { [REGISTRY_SEAL_KEY]: 'short' }]) {
      expect(() => registrySealFromEnv(env)).toThrow(ConfigError);
      expect(() => registrySealFromEnv(env)).toThrow(/REGISTRY_SEAL_KEY: /);
    }
  });
});
