// What the fuzz tests check (split from fuzz.ts, which exports it): whether an answer is a complete response below 500
// in the API's error shape, hand-written cases and their expected statuses, runs of many requests and their failures.
import { type FuzzRequest, type RawResponse, eventStream, requestBytes, send, sendRaw } from './raw-http';

/** The error body of each API: KV and Queue `{"error": string}`; Vector and Stream `{"error": string, "status": number}`. */
export type ErrorShape = 'kv' | 'vector' | 'stream' | 'queue';

/**
 * What is wrong with a response to a fuzzed request, or undefined: a 5xx; an incomplete response;
 * a body on HEAD; an error (4xx) whose body is not exactly the API's error shape (Vector and Stream:
 * `status` equal to the HTTP status); a success body that is not JSON (an event stream is checked by
 * its head only).
 */
export function responseProblem(shape: ErrorShape, method: string, response: RawResponse): string | undefined {
  if (response.problem) return response.problem;
  if (response.status >= 500) return `status ${response.status}`;
  if (method === 'HEAD' || (response.status < 300 && eventStream(response.headers))) return undefined;
  let parsed: unknown;
  if (response.body !== '' || response.status >= 400) {
    try {
      parsed = JSON.parse(response.body);
    } catch {
      return `status ${response.status} with a body that is not JSON`;
    }
  }
  if (response.status < 400) return undefined;
  const body = parsed as Record<string, unknown> | null;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return `status ${response.status} with a body that is not an object`;
  const keys = Object.keys(body).sort().join(',');
  if (typeof body.error !== 'string' || body.error === '') return `status ${response.status} without an error string`;
  if (shape === 'kv' || shape === 'queue') return keys === 'error' ? undefined : `status ${response.status} with keys ${keys} (want error)`;
  if (keys !== 'error,status') return `status ${response.status} with keys ${keys} (want error,status)`;
  return body.status === response.status ? undefined : `HTTP status ${response.status} but body status ${String(body.status)}`;
}

/** A short account of a request and its response for failure reports (bodies cut to 160 characters). */
export function describeExchange(request: FuzzRequest | string, response: RawResponse): string {
  const cut = (text: string) => (text.length > 160 ? `${text.slice(0, 160)}…(${text.length})` : text);
  const what =
    typeof request === 'string'
      ? request
      : `${request.method} ${cut(request.path)}${request.headers ? ` ${cut(JSON.stringify(Object.fromEntries(Object.entries(request.headers).map(([k, v]) => [k, String(v)]))))}` : ''}${request.body !== undefined ? ` body ${cut(JSON.stringify(String(request.body)))}` : ''}`;
  return `${what} → ${response.status} ${cut(JSON.stringify(response.body))}${response.problem ? ` [${response.problem}]` : ''}`;
}

/**
 * One hand-written case: a request (or raw bytes, for what no well-formed request can carry) and the
 * status the issue or the spec demands (one of several, or undefined: any status that is not 5xx).
 */
export interface FuzzCase {
  request?: FuzzRequest;
  raw?: Buffer;
  head?: boolean;
  expect?: number | number[];
}

/**
 * Sends a case and returns 'ok', or what is wrong followed by the exchange (so that a failing test
 * names the request and the response it got): a {@link responseProblem}, or another status than the
 * expected one.
 */
export async function runCase(url: string, shape: ErrorShape, fuzzCase: FuzzCase, options: { timeoutMs?: number } = {}): Promise<string> {
  const head = fuzzCase.head ?? fuzzCase.request?.method === 'HEAD';
  const bytes = fuzzCase.raw ?? requestBytes(url, fuzzCase.request ?? { method: 'GET', path: '/' });
  const response = await sendRaw(url, bytes, { head, ...options });
  const problem = responseProblem(shape, head ? 'HEAD' : (fuzzCase.request?.method ?? 'GET'), response);
  const expected = fuzzCase.expect === undefined ? undefined : [fuzzCase.expect].flat();
  const wrong = problem ?? (expected && !expected.includes(response.status) ? `status ${response.status}, want ${expected.join(' or ')}` : undefined);
  if (!wrong) return 'ok';
  const what = fuzzCase.request ?? JSON.stringify(bytes.toString('latin1').slice(0, 160));
  return `${wrong}: ${describeExchange(what, response)}`;
}

/**
 * Sends a request and parses the JSON answer, for reading back after a fuzz run: `problem` is the
 * {@link responseProblem} or another status than `expect` (default 200), with the exchange.
 */
export async function readBack(url: string, shape: ErrorShape, request: FuzzRequest, expect: number[] = [200]): Promise<{ problem?: string; status: number; body: unknown }> {
  const response = await send(url, request, { timeoutMs: 20_000 });
  const problem = responseProblem(shape, request.method, response) ?? (expect.includes(response.status) ? undefined : `status ${response.status}, want ${expect.join(' or ')}`);
  let body: unknown;
  try {
    body = response.body === '' ? undefined : JSON.parse(response.body);
  } catch {
    body = response.body;
  }
  return { status: response.status, body, ...(problem ? { problem: `${problem}: ${describeExchange(request, response)}` } : {}) };
}

/** A failure of a fuzz exchange, with the request and the response, for grouping and reporting. */
export interface FuzzFailure {
  /** Method and first path segment, to group failures by endpoint. */
  endpoint: string;
  exchange: string;
  problem: string;
}

/**
 * Runs fuzz requests one after the other and collects those whose response has a
 * {@link responseProblem} (one line per failure, so the test failure lists every request to route),
 * and how many answers each status got (to see what the fuzz reached).
 */
export async function runFuzz(
  url: string,
  shape: ErrorShape,
  requests: FuzzRequest[],
  options: { timeoutMs?: number } = {},
): Promise<{ failures: FuzzFailure[]; statuses: Record<number, number> }> {
  const failures: FuzzFailure[] = [];
  const statuses: Record<number, number> = {};
  for (const request of requests) {
    const response = await send(url, request, options);
    statuses[response.status] = (statuses[response.status] ?? 0) + 1;
    const problem = responseProblem(shape, request.method, response);
    if (problem) failures.push({ endpoint: `${request.method} /${request.path.split(/[/?]/)[1] ?? ''}`, exchange: describeExchange(request, response), problem });
  }
  return { failures, statuses };
}

/** Failures grouped by problem, at most `perGroup` examples each (for readable test output). */
export function summarizeFailures(failures: FuzzFailure[], perGroup = 3): string[] {
  const groups = new Map<string, string[]>();
  for (const f of failures) {
    const key = `${f.endpoint}: ${f.problem.slice(0, 120)}`;
    groups.set(key, [...(groups.get(key) ?? []), f.exchange]);
  }
  return [...groups.entries()].map(([problem, exchanges]) => `${exchanges.length}× ${problem}:\n    ${exchanges.slice(0, perGroup).join('\n    ')}`);
}

/** Sends raw requests one after the other and collects those whose response has a {@link responseProblem}, grouped by problem. */
export async function runRawFuzz(url: string, shape: ErrorShape, requests: Array<{ bytes: Buffer; head: boolean; text: string }>): Promise<{ failures: FuzzFailure[]; statuses: Record<number, number> }> {
  const failures: FuzzFailure[] = [];
  const statuses: Record<number, number> = {};
  for (const request of requests) {
    const response = await sendRaw(url, request.bytes, { head: request.head ? 'maybe' : false, timeoutMs: 10_000 });
    statuses[response.status] = (statuses[response.status] ?? 0) + 1;
    const problem = responseProblem(shape, request.head ? 'HEAD' : 'GET', response);
    if (problem) failures.push({ endpoint: 'raw', exchange: describeExchange(JSON.stringify(request.text.slice(0, 200)), response), problem });
  }
  return { failures, statuses };
}
