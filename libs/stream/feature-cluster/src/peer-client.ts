import { createHmac, timingSafeEqual } from 'node:crypto';
import { networkInterfaces } from 'node:os';
import { Agent, request } from 'undici';
import { type ConsumeRequest, StreamError, type TopicPartitionOffset } from '@restash/stream/util-rest';
import type { Replica } from './instance-directory';

/** The path of the peer endpoint on the Stream API port: not a Stream API endpoint, answered only to peers. */
export const PEER_PATH = '/_restash/peer';

/** An operation on a consumer instance held by another replica, as one replica forwards it to the holder. */
export type PeerOperation =
  | { op: 'consume'; group: string; name: string; request: ConsumeRequest; headers: Record<string, string> }
  | { op: 'commit'; group: string; name: string; offsets: TopicPartitionOffset[] }
  | { op: 'delete'; group: string; name: string }
  | { op: 'list' };

/** A forwarded operation: for the replica started as `boot`, on the stream cluster `cluster` (its registry id). */
export type PeerCall = PeerOperation & { boot: string; cluster: string };

/** What the holder answered: the operation's value, or that it is not (any more) the replica the call was for. */
export type PeerAnswer = { kind: 'value'; value: unknown } | { kind: 'gone' };

/** The status of the peer endpoint's answer "I am not the replica you meant" (HTTP 421 Misdirected Request). */
export const PEER_GONE = 421;

/**
 * Thrown by {@link PeerCall} handling when the call is for another start of this replica (answered 421): the caller
 * then takes the instance over (docs/stream.md, "Stream: consumer instances").
 */
export class PeerGoneError extends Error {
  constructor() {
    super('this gateway replica is not the one the call was for (it restarted)');
    this.name = 'PeerGoneError';
  }
}

/**
 * The secret peers present on the peer endpoint: an HMAC-SHA256 of a fixed label under REGISTRY_SEAL_KEY (a
 * 32-byte key every gateway replica has, base64), hex. Tenants do not have it, so the endpoint is no way into
 * another tenant's consumer instances.
 */
export function peerSecret(registrySealKey: string): string {
  return createHmac('sha256', Buffer.from(registrySealKey, 'base64')).update('restash stream-gateway peer v1').digest('hex');
}

/** Whether an `Authorization` header carries the peer secret (compared in constant time). */
export function isPeer(authorization: string | undefined, secret: string): boolean {
  const given = Buffer.from(authorization ?? '');
  const wanted = Buffer.from(`Bearer ${secret}`);
  return given.length === wanted.length && timingSafeEqual(given, wanted);
}

/**
 * The host peers reach this replica at: PEER_HOST when set (the chart passes the pod IP), else the bound
 * address unless it is a wildcard, else the first non-internal IPv4 address (a pod's IP), else 127.0.0.1.
 */
export function peerHost(configured: string | undefined, bound: string): string {
  if (configured) return configured;
  if (bound !== '0.0.0.0' && bound !== '::' && bound !== '') return bound;
  for (const addresses of Object.values(networkInterfaces())) {
    const found = addresses?.find((a) => a.family === 'IPv4' && !a.internal);
    if (found) return found.address;
  }
  return '127.0.0.1';
}

/**
 * Forwards consumer-instance operations to the replica holding the instance (docs/stream.md, "Stream: consumer
 * instances"). A holder that cannot be connected to within `connectTimeoutMs`, or that answers it is not the
 * replica meant (a restarted process at the same address), is `gone`: the caller then takes the instance over.
 * The adapter of PeerPort (ports.ts).
 */
export class PeerClient {
  private readonly agent: Agent;

  constructor(
    private readonly secret: string,
    connectTimeoutMs = 2000,
  ) {
    this.agent = new Agent({ connect: { timeout: connectTimeoutMs }, keepAliveTimeout: 10_000 });
  }

  /**
   * Runs an operation on `to`.
   * @param waitMs how long the holder may take to answer (ms)
   * @returns the holder's value, or gone
   * @throws StreamError the holder's own error answer (status and message), or 503 when it stopped answering
   *   after the connection was made (it may have died mid-request: the client retries)
   */
  async call(to: Replica, clusterId: string, operation: PeerOperation, waitMs: number): Promise<PeerAnswer> {
    const body: PeerCall = { ...operation, boot: to.boot, cluster: clusterId };
    let response;
    try {
      response = await request(`${to.peer}${PEER_PATH}`, {
        method: 'POST',
        dispatcher: this.agent,
        headers: { authorization: `Bearer ${this.secret}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
        headersTimeout: waitMs,
        bodyTimeout: waitMs,
      });
    } catch (error) {
      if (isConnectFailure(error)) return { kind: 'gone' };
      throw new StreamError(503, `Service unavailable: the gateway replica holding the consumer instance stopped answering (${describe(error)}); retry`);
    }
    let text: string;
    try {
      text = await response.body.text();
    } catch (error) {
      throw new StreamError(503, `Service unavailable: the gateway replica holding the consumer instance stopped answering (${describe(error)}); retry`);
    }
    if (response.statusCode === PEER_GONE) return { kind: 'gone' };
    let parsed: { value?: unknown; error?: unknown; status?: unknown };
    try {
      parsed = JSON.parse(text) as typeof parsed;
    } catch {
      throw new StreamError(503, `Service unavailable: the gateway replica holding the consumer instance answered ${response.statusCode} without JSON; retry`);
    }
    if (response.statusCode === 200) return { kind: 'value', value: parsed.value };
    throw new StreamError(response.statusCode, typeof parsed.error === 'string' ? parsed.error : `the holding replica answered ${response.statusCode}`);
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}

const PEER_OPERATIONS = new Set(['consume', 'commit', 'delete', 'list']);

/**
 * A peer's forwarded call (PeerCall), the body of `POST /_restash/peer` (docs/stream.md, "Stream: consumer instances"):
 * its envelope is checked; the operation's arguments come from a replica that checked them already.
 * @throws StreamError 400 for a body that is no PeerCall
 */
export function parsePeerCall(body: unknown): PeerCall {
  let call: Partial<PeerCall> & { group?: unknown; name?: unknown };
  try {
    call = JSON.parse(Buffer.isBuffer(body) ? body.toString('utf8') : '') as typeof call;
  } catch {
    throw StreamError.badRequest('Illegal argument: a peer call is JSON');
  }
  const named = call.op === 'list' || (typeof call.group === 'string' && typeof call.name === 'string');
  if (typeof call.boot !== 'string' || typeof call.cluster !== 'string' || !PEER_OPERATIONS.has(String(call.op)) || !named) {
    throw StreamError.badRequest('Illegal argument: not a peer call');
  }
  return call as PeerCall;
}

const CONNECT_FAILURES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT']);

/** Whether a request failed before the holder could have received it (no connection was made). */
function isConnectFailure(error: unknown): boolean {
  for (let e: unknown = error; e; e = (e as { cause?: unknown }).cause) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && CONNECT_FAILURES.has(code)) return true;
  }
  return false;
}

function describe(error: unknown): string {
  const code = (error as { code?: unknown })?.code;
  return typeof code === 'string' ? code : error instanceof Error ? error.message : String(error);
}
