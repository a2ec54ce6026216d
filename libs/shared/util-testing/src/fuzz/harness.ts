// What every API's fuzz test sets up and runs the same way (split from fuzz.ts, which exports it): the request builders with
// the kinds of credential a request carries, the foreign tenant's registration, the hand-written cases and the fast-check
// run on requests as jest blocks, and the reading back after the fuzz.
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { type ErrorShape, type FuzzCase, readBack, runCase, runFuzz, summarizeFailures } from './checks';
import type { FuzzRequest } from './raw-http';

/** Tokens of the foreign tenant's resources, by API: a real token of each API, to try against the others. */
export type ForeignTokens = Record<'kv' | 'vector' | 'stream' | 'queue', string>;

/** The credentials every fuzz test tries besides its tenant's own: none, a wrong secret, and the other APIs' real tokens. */
export type StrangerAuth = 'none' | 'garbage' | keyof ForeignTokens;

/** Bearer authorization, or none. */
export function bearer(token: string | undefined): Record<string, string> {
  return token === undefined ? {} : { Authorization: `Bearer ${token}` };
}

/** Request builders of a fuzz test, each request carrying one kind of credential (`Auth`). */
export interface FuzzClient<Auth extends string> {
  /** The Authorization header of a kind of credential (none for `none`). */
  authHeader(auth: Auth): Record<string, string>;
  /** A request with a JSON body. */
  json(path: string, body: unknown, auth?: Auth, method?: string): FuzzRequest;
  /** A request with a body sent as it is. */
  raw(path: string, body: string | Buffer, auth?: Auth, method?: string): FuzzRequest;
  /** A request without a body, with extra headers. */
  bare(path: string, method?: string, auth?: Auth, headers?: Record<string, string | Buffer>): FuzzRequest;
}

/**
 * The request builders of a fuzz test. `own` gives the Authorization header of each of the tenant's own kinds of
 * credential (undefined for the others), read when a request is built (the stack starts in a beforeAll); `none` is
 * no header, `garbage` a wrong secret and another API's name that API's real token from `foreign`, each as `secret`
 * presents a secret (Bearer by default). `fallback` is the credential of a request that names none.
 */
export function fuzzClient<Auth extends string>(options: {
  fallback: Auth;
  own: (auth: Auth) => Record<string, string> | undefined;
  foreign: () => ForeignTokens;
  secret?: (secret: string) => Record<string, string>;
}): FuzzClient<Auth> {
  const { fallback, own, foreign, secret = bearer } = options;
  const authHeader = (auth: Auth): Record<string, string> => {
    const mine = own(auth);
    if (mine) return mine;
    if (auth === 'none') return {};
    return secret(auth === 'garbage' ? 'not-a-token' : foreign()[auth as keyof ForeignTokens]);
  };
  return {
    authHeader,
    json: (path, body, auth = fallback, method = 'POST') => ({ method, path, headers: authHeader(auth), body: JSON.stringify(body) }),
    raw: (path, body, auth = fallback, method = 'POST') => ({ method, path, headers: authHeader(auth), body }),
    bare: (path, method = 'GET', auth = fallback, headers = {}) => ({ method, path, headers: { ...authHeader(auth), ...headers } }),
  };
}

/**
 * Writes the {@link foreignTenant} into the registry on `controlUrl` and returns its real tokens of each API. `apply` is
 * the registry's write, `new RegistryWriter(registry, seal).applyTenant(tenantDocumentSchema.parse(document), tokens)`:
 * the caller's, as this library cannot import the registry (whose own tests import this library).
 */
export async function registerForeignTenant(
  controlUrl: string,
  apply: (registry: Redis, document: unknown, tokens: ForeignTenant['tokens']) => Promise<unknown>,
  name?: string,
): Promise<ForeignTokens> {
  const registry = new Redis(controlUrl);
  try {
    const tenant = foreignTenant(name);
    await apply(registry, tenant.document, tenant.tokens);
    return tenant.standard;
  } finally {
    registry.disconnect();
  }
}

/** A tenant document with one resource of each API on unreachable engines, its tokens, and its standard token of each API. */
export interface ForeignTenant {
  document: unknown;
  tokens: { kv: object; vector: object; stream: object; queue: object };
  standard: ForeignTokens;
}

/**
 * A tenant document (for tenantDocumentSchema) with one resource of each API on unreachable engines,
 * and the tokens to register with it (RegistryWriter.applyTenant's shape): its standard tokens are
 * real tokens of every API, so that a fuzz test can check a gateway refuses the others' tokens (401).
 */
export function foreignTenant(name = 'foreign'): ForeignTenant {
  const token = () => randomBytes(32).toString('base64url');
  const signingKey = () => `sig_${randomBytes(21).toString('base64url')}`;
  const standard: ForeignTokens = { kv: token(), vector: token(), stream: token(), queue: token() };
  return {
    document: {
      apiVersion: 'restash.dev/v1alpha1',
      kind: 'Tenant',
      metadata: { name },
      spec: {
        kv: { databases: [{ name: 'k', redis: { url: 'redis://127.0.0.1:1/0' } }] },
        vector: { indexes: [{ name: 'v', dimension: 2, qdrant: { url: 'http://127.0.0.1:1' } }] },
        stream: { clusters: [{ name: 's', kafka: { brokers: ['127.0.0.1:1'] }, topics: [{ name: 't' }] }] },
        queue: { projects: [{ name: 'q' }] },
      },
    },
    tokens: {
      kv: { k: { standard: standard.kv, readonly: token() } },
      vector: { v: { standard: standard.vector, readonly: token() } },
      stream: { s: { standard: standard.stream, readonly: token() } },
      queue: { q: { standard: standard.queue, readonly: token(), currentSigningKey: signingKey(), nextSigningKey: signingKey() } },
    },
    standard,
  };
}

/** Prints the seed of an API's fuzz test and how to repeat the run. */
export function announceSeed(shape: ErrorShape, seed: number): void {
  process.stdout.write(`${shape} fuzz seed ${seed} (FUZZ_SEED=${seed} repeats this run)\n`);
}

/** The error body an API's errors must be exactly, as its fuzz tests name it. */
function errorBody(shape: ErrorShape): string {
  return shape === 'kv' || shape === 'queue' ? '{error}' : '{error, status}';
}

/**
 * The hand-written cases of an API's fuzz test as jest blocks declared where it is called: each case a test of its own,
 * named by its label, that must get a complete answer below 500 in the API's error shape, of the status it expects.
 * @param url read when the tests run (the stack starts in a beforeAll)
 */
export function describeFuzzCases(shape: ErrorShape, url: () => string, cases: Array<[string, () => FuzzCase]>, options: { timeoutMs: number }): void {
  describe('hand-written malformed requests', () => {
    it.each(cases)('%s', async (_name, build) => {
      expect(await runCase(url(), shape, build(), options)).toBe('ok');
    });
  });
}

/**
 * The fast-check run of an API's fuzz test on well-formed HTTP requests with malformed content, as jest blocks declared
 * where it is called: `runs` samples of `requests` (seed `seed`) sent one after the other, each of which must get a
 * complete answer below 500 in the API's error shape; the answers by status are printed.
 * @param url read when the test runs
 * @param prepare turns the samples into what is sent, when the test runs (e.g. puts a live id in)
 */
export function describeRequestFuzz(
  shape: ErrorShape,
  url: () => string,
  requests: fc.Arbitrary<FuzzRequest>,
  options: { seed: number; runs: number; timeoutMs: number; testTimeoutMs: number; prepare?: (requests: FuzzRequest[]) => Promise<FuzzRequest[]> },
): void {
  describe(`fast-check (seed ${options.seed}, ${options.runs} runs)`, () => {
    it(`answers every random malformed request completely, below 500, errors as exactly ${errorBody(shape)}`, async () => {
      const sampled = fc.sample(requests, { seed: options.seed, numRuns: options.runs });
      const { failures, statuses } = await runFuzz(url(), shape, options.prepare ? await options.prepare(sampled) : sampled, { timeoutMs: options.timeoutMs });
      process.stdout.write(`${shape} fuzz: answers by status ${JSON.stringify(statuses)}\n`);
      expect(summarizeFailures(failures)).toEqual([]);
    }, options.testTimeoutMs);
  });
}

/**
 * Reading back what a fuzz run left: `read` sends a request and returns its parsed body, noting in `problems` an
 * answer that is not a complete one in the API's shape or has another status than `expect` (default 200).
 */
export function readingBack(url: string, shape: ErrorShape): { problems: string[]; read(request: FuzzRequest, expect?: number[]): Promise<unknown> } {
  const problems: string[] = [];
  return {
    problems,
    read: async (request, expect) => {
      const answer = await readBack(url, shape, request, expect);
      if (answer.problem) problems.push(answer.problem);
      return answer.body;
    },
  };
}
