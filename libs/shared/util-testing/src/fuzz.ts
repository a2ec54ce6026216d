// The fuzzing helpers of the API tests. Here: the seed, Bearer headers and a foreign tenant; in fuzz/: raw-http.ts
// (requests as bytes on a raw socket, responses parsed), checks.ts (what an answer must be, runs and failures),
// hostile-values.ts (fast-check arbitraries of hostile strings, values and bodies) and http-level.ts (the HTTP-level
// garbage and random requests every API's fuzz test shares). Everything is exported from here.
import { randomBytes } from 'node:crypto';
export {
  type ErrorShape,
  type FuzzCase,
  type FuzzFailure,
  describeExchange,
  readBack,
  responseProblem,
  runCase,
  runFuzz,
  runRawFuzz,
  summarizeFailures,
} from './fuzz/checks';
export { brokenBody, hostileHeaderValue, hostileString, hostileValue, mutatedJson, nestedJson } from './fuzz/hostile-values';
export { type FuzzTarget, type RawCase, describeHttpLevelFuzz, httpGarbage, rawHttpRequest } from './fuzz/http-level';
export { type FuzzRequest, type RawResponse, encodeSegment, requestBytes, send, sendRaw, wtf8 } from './fuzz/raw-http';

/**
 * Fuzzing of the four HTTP APIs (issue 11): requests written byte for byte on a raw socket, so that
 * anything a hostile client can send is sendable (lone surrogates as WTF-8 bytes, invalid header
 * names, unregistered methods, no Host), and checks that every answer is a complete HTTP response
 * in the API's own error shape.
 */

/**
 * The seed of the fuzz runs: FUZZ_SEED from the environment, or a fixed one, so that a run can be
 * repeated exactly. Callers print it.
 */
export function fuzzSeed(fallback = 20261122): number {
  const fromEnv = Number(process.env.FUZZ_SEED);
  return Number.isSafeInteger(fromEnv) && process.env.FUZZ_SEED !== '' ? fromEnv : fallback;
}

/** Bearer authorization, or none. */
export function bearer(token: string | undefined): Record<string, string> {
  return token === undefined ? {} : { Authorization: `Bearer ${token}` };
}

/** Tokens of a {@link foreignTenant}'s resources, by API: a real token of each API, to try against the others. */
export type ForeignTokens = Record<'kv' | 'vector' | 'stream' | 'queue', string>;

/**
 * A tenant document (for tenantDocumentSchema) with one resource of each API on unreachable engines,
 * and the tokens to register with it (RegistryWriter.applyTenant's shape): its standard tokens are
 * real tokens of every API, so that a fuzz test can check a gateway refuses the others' tokens (401).
 */
export function foreignTenant(name = 'foreign'): { document: unknown; tokens: { kv: object; vector: object; stream: object; queue: object }; standard: ForeignTokens } {
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
