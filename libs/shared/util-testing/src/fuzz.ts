// The fuzzing helpers of the API tests. Here: the seed; in fuzz/: raw-http.ts (requests as bytes on a raw socket, responses
// parsed), checks.ts (what an answer must be, runs and failures), hostile-values.ts (fast-check arbitraries of hostile
// strings, values and bodies), http-level.ts (the HTTP-level garbage and random requests every API's fuzz test shares) and
// harness.ts (request builders and credentials, a foreign tenant, the hand-written cases and the fast-check run on requests
// as jest blocks, reading back). Everything is exported from here.
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
export {
  type ForeignTenant,
  type ForeignTokens,
  type FuzzClient,
  type StrangerAuth,
  announceSeed,
  bearer,
  describeFuzzCases,
  describeRequestFuzz,
  foreignTenant,
  fuzzClient,
  readingBack,
  registerForeignTenant,
} from './fuzz/harness';
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
