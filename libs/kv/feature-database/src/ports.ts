import type { CommandRunner, KvBackend, KvBackends, ReplicaWait } from '@restash/kv/data-access-redis';
import type { CommandTable, PolicyContext, TokenRole } from '@restash/kv/util-command';
import type { KvDatabaseRecord, RegistryReader, RuntimeStore, TokenRecord } from '@restash/shared/data-access-registry';

/**
 * The ports of the KV API's logic (docs/kv.md, "What the KV API does"): what KvSessions and KvCommands need from the
 * world, injected by apps/kv-gateway/src/app.module.ts and faked in unit tests (src/testing/fakes.ts).
 */

/** What the tenant gate grants a KV token (TenantGate.open('kv'): Grant<'kv'>), as far as this library reads it. */
export interface KvGrant {
  tenant: string;
  token: TokenRecord;
  resource: KvDatabaseRecord;
}

/** An authenticated request's view of its database. */
export interface KvSession<G extends KvGrant = KvGrant> {
  grant: G;
  tenant: string;
  token: string;
  database: KvDatabaseRecord;
  role: TokenRole;
  backend: KvBackend;
  /** Runs commands: the database's connections, or the ACL user's connection. */
  runner: CommandRunner;
  table: CommandTable;
  /** The database's logical database number on its server (the URL's path, 0 when none). */
  db: number;
  policy: PolicyContext;
  /** For ACL tokens: the Redis user the commands run as. */
  user?: { username: string; password: string };
  /** What a write waits for: set for a database with `durability: replicated` (docs/operations.md, "KV databases: durability"). */
  wait?: ReplicaWait;
}

/** The registry as the KV API reads it (RegistryReader): database records, recorded ACL users, change announcements. */
export type KvRegistry = Pick<RegistryReader, 'kvDatabase' | 'kvAclUserRules' | 'onChange'>;

/** What the KV API records in the registry at run time (docs/architecture.md, "Architecture: tenant registry"): server bindings, ACL users and tokens. */
export type KvRuntimeRecords = Pick<RuntimeStore, 'bindKvServer' | 'putKvAclUser' | 'announce' | 'putRuntimeToken'>;

/** The databases' Redis connections (KvBackends of libs/kv/data-access-redis). */
export type KvBackendPool = Pick<KvBackends, 'get' | 'find' | 'drop' | 'close'>;

/**
 * Runs a call on the control Redis for a tenant's request (TenantGate.registryCall).
 * @throws TenantDenied `registry-unavailable` when the control Redis cannot be reached
 */
export type RegistryCall = <T>(tenant: string, run: () => Promise<T>) => Promise<T>;

/** Where commands and backend failures are counted (the app's Prometheus metrics). */
export interface KvObserver {
  countCommand(tenant: string, command: string): void;
  backendError(tenant: string, kind: 'connection' | 'replication'): void;
}

/** The timeouts KvSessions and KvCommands apply (KvGatewayConfig). */
export interface KvLimits {
  /** How long an authenticated token's session is reused (REGISTRY_CACHE_TTL_MS). */
  sessionTtlMs: number;
  /** A script or function running longer is killed (REDIS_SCRIPT_TIMEOUT_MS). */
  scriptTimeoutMs: number;
  /** How long a write of a `durability: replicated` database waits for a replica (REPLICA_ACK_TIMEOUT_MS). */
  replicaAckTimeoutMs: number;
}
