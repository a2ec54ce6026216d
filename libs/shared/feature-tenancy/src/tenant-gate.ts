import {
  type DailyQuota,
  type KvDatabaseRecord,
  type QueueProjectRecord,
  type RegistryReader,
  type StreamClusterRecord,
  type TokenRecord,
  type VectorIndexRecord,
  streamUsername,
} from '@restash/shared/data-access-registry';
import type { Credentials } from './credentials';

/** The four APIs, as token records name them. */
export type ApiName = TokenRecord['api'];

/** The registry record of the resource a token of each API opens. */
export interface ApiResources {
  kv: KvDatabaseRecord;
  vector: VectorIndexRecord;
  stream: StreamClusterRecord;
  queue: QueueProjectRecord;
}

/** An opened resource: whose it is, which record, and with what rights. */
export interface Grant<A extends ApiName = ApiName> {
  api: A;
  tenant: string;
  token: TokenRecord;
  resource: ApiResources[A];
  /** The token's role is `readonly`: writes are denied. */
  readOnly: boolean;
}

/** What a request asks of its grant (docs/architecture.md, "Architecture: limits"). */
export interface Admission {
  /** The request changes something (denied for read-only tokens). */
  write: boolean;
  /** The request's size in bytes, as the API measures it (body, path, …). */
  bytes: number;
  /** Requests it counts as against the daily limit (KV: its commands); 1 when left out. */
  units?: number;
}

/**
 * Why the gate denied a request:
 * - `missing`: no credentials; `unknown`: a token the registry does not know for this API (or a
 *   Basic user name that is not the token's)
 * - `read-only`: a write with a read-only token
 * - `too-large`: over the resource's maximum request size (`limit`, `actual` in bytes)
 * - `daily-limit`: over the resource's daily request limit (`limit`; `actual`: requests counted today)
 * - `registry-unavailable`: the control Redis failed (`cause`)
 * - `unread-answers`: the tenant's clients have not yet read `actual` bytes of earlier answers, more than
 *   the gateway holds for one tenant (`limit`; registerTenantApi)
 */
export type DenialReason = 'missing' | 'unknown' | 'read-only' | 'too-large' | 'daily-limit' | 'registry-unavailable' | 'unread-answers';

/** A request the tenant gate refused; each API answers it from its {@link DenialTable}. */
export class TenantDenied extends Error {
  /** The tenant, when known ('' before a token is resolved). */
  readonly tenant: string;
  readonly limit: number | undefined;
  readonly actual: number | undefined;

  constructor(
    readonly reason: DenialReason,
    detail: { tenant?: string; limit?: number; actual?: number; cause?: unknown } = {},
  ) {
    super(`tenant gate: ${reason}`, detail.cause === undefined ? undefined : { cause: detail.cause });
    this.name = 'TenantDenied';
    this.tenant = detail.tenant ?? '';
    this.limit = detail.limit;
    this.actual = detail.actual;
  }
}

/** An API's answer to each denial: HTTP status, and the message (fixed, or made from the denial's detail). */
export type DenialTable = { readonly [R in DenialReason]: readonly [status: number, message: string | ((denied: TenantDenied) => string)] };

/**
 * The size, daily-limit and unread-answer answers that the Vector, Stream and queue APIs share (413 and
 * 429, naming their resource): `Request too large: <actual> bytes, at most <limit> for this <resource>`,
 * `Daily request limit of <limit> reached for this <resource>` and {@link unreadAnswersMessage}.
 */
export function limitDenials(resource: string): Pick<DenialTable, 'too-large' | 'daily-limit' | 'unread-answers'> {
  return {
    'too-large': [413, (d) => `Request too large: ${d.actual} bytes, at most ${d.limit} for this ${resource}`],
    'daily-limit': [429, (d) => `Daily request limit of ${d.limit} reached for this ${resource}`],
    'unread-answers': [429, unreadAnswersMessage],
  };
}

/** `Too many unread answers: your clients have not yet read <actual> bytes of earlier answers (at most <limit>); retry later`. */
export function unreadAnswersMessage(denied: TenantDenied): string {
  return `Too many unread answers: your clients have not yet read ${denied.actual} bytes of earlier answers (at most ${denied.limit}); retry later`;
}

/** The status and message an API answers a denial with. */
export function denialAnswer(table: DenialTable, denied: TenantDenied): { status: number; message: string } {
  const [status, message] = table[denied.reason];
  return { status, message: typeof message === 'string' ? message : message(denied) };
}

/** Reads the record of a resource by id. */
const RESOURCES: { [A in ApiName]: (reader: RegistryReader, id: string) => Promise<ApiResources[A] | null> } = {
  kv: (reader, id) => reader.kvDatabase(id),
  vector: (reader, id) => reader.vectorIndex(id),
  stream: (reader, id) => reader.streamCluster(id),
  queue: (reader, id) => reader.queueProject(id),
};

/**
 * The tenant gate of every API (docs/architecture.md, "Architecture: credentials" and "Architecture: limits"): opens
 * a grant from a request's credentials through the registry, and admits a request under its resource's
 * limits. Every refusal is a {@link TenantDenied}; nothing here knows HTTP or any API's wording.
 */
export class TenantGate {
  constructor(
    private readonly reader: Pick<RegistryReader, 'resolveToken' | 'kvDatabase' | 'vectorIndex' | 'streamCluster' | 'queueProject'>,
    private readonly quota: Pick<DailyQuota, 'consume'>,
  ) {}

  /**
   * The resource a token of `api` opens. With Basic credentials (stream clusters) the user name must
   * be the one issued with the token's role.
   * @throws TenantDenied `missing` without credentials, `unknown` for a token of no resource of this
   *   API, `registry-unavailable` when the control Redis fails
   */
  async open<A extends ApiName>(api: A, credentials: Credentials | undefined): Promise<Grant<A>> {
    if (!credentials) throw new TenantDenied('missing');
    const resolved = await this.registryCall('', () => this.reader.resolveToken(credentials.token));
    const token = resolved?.record;
    const lookup = RESOURCES[api] as (reader: TenantGate['reader'], id: string) => Promise<ApiResources[A] | null>;
    const resource = token?.api === api ? await this.registryCall('', () => lookup(this.reader, token.resource)) : null;
    if (!token || !resource) throw new TenantDenied('unknown');
    if (credentials.username !== undefined && (api !== 'stream' || credentials.username !== streamUsername(resource.id, token.role))) {
      throw new TenantDenied('unknown');
    }
    return { api, tenant: resource.tenant, token, resource, readOnly: token.role === 'readonly' };
  }

  /**
   * Admits one request: write rights, then size, then the daily count (which a refused request does not use).
   * Decided at once, without a promise, for a resource without a daily limit (the hot path of every request:
   * bench/kv/profile.md); with one, the count in the control Redis decides.
   * @returns undefined when admitted at once, else a promise of the count's decision
   * @throws TenantDenied (synchronously, or as the promise's rejection for the count) `read-only`, `too-large`,
   *   `daily-limit`, or `registry-unavailable`
   */
  admit(grant: Grant, { write, bytes, units = 1 }: Admission): Promise<void> | undefined {
    const { tenant, resource } = grant;
    if (write && grant.readOnly) throw new TenantDenied('read-only', { tenant });
    if (bytes > resource.maxRequestBytes) throw new TenantDenied('too-large', { tenant, limit: resource.maxRequestBytes, actual: bytes });
    const limit = resource.dailyRequestLimit;
    if (limit <= 0) return undefined;
    return this.registryCall(tenant, () => this.quota.consume(grant.api, resource.id, units, limit)).then((decision) => {
      if (!decision.allowed) throw new TenantDenied('daily-limit', { tenant, limit, actual: decision.used });
    });
  }

  /**
   * Runs a call on the control Redis (the registry, quotas, state an API keeps there).
   * @throws TenantDenied `registry-unavailable` when it fails (a TenantDenied it throws passes unchanged)
   */
  async registryCall<T>(tenant: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      if (error instanceof TenantDenied) throw error;
      throw new TenantDenied('registry-unavailable', { tenant, cause: error });
    }
  }
}
