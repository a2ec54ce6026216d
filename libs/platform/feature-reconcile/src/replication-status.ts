import type { KvDatabase, KvDatabaseStatus } from '@restash/shared/util-resources';
import { type Condition, setCondition, statusChanged } from '@restash/operator/util-controller';
import { type ServerPod, type UpgradeStep, nextUpgradeStep } from './rolling-upgrade';

/** One replica as its primary sees it (`INFO replication`'s `slave<n>:` line). */
export interface ReplicaInfo {
  /** The replica's announced host (managed databases: its pod's DNS name) and port. */
  host: string;
  port: number;
  /** `online`, or a state of the initial sync (`wait_bgsave`, `send_bulk`). */
  state: string;
  /** Seconds since the replica last acknowledged the stream. */
  lagSeconds: number;
  /** Bytes of the replication stream the replica has not acknowledged yet. */
  behindBytes: number;
}

/** A replicated database's primary (by the host the sentinels name) and its replicas. */
export interface ReplicationInfo {
  primary: string;
  primaryPort: number;
  replicas: ReplicaInfo[];
}

/** A replica acknowledging nothing for longer than this (s) makes the database Degraded. */
export const REPLICA_LAG_LIMIT_SECONDS = 10;

/**
 * The replicas in a primary's `INFO replication` text (Redis and Valkey: `slave<n>:ip=…,port=…,state=…,offset=…,lag=…`
 * and `master_repl_offset:…`).
 * @param primary the primary's host and port, as the sentinels name them
 */
export function parseReplicationInfo(info: string, primary: string, primaryPort = 6379): ReplicationInfo {
  const fields = new Map(
    info
      .split(/\r?\n/)
      .map((line) => line.split(':'))
      .filter((parts) => parts.length >= 2)
      .map(([key = '', ...rest]) => [key, rest.join(':')] as const),
  );
  const head = Number(fields.get('master_repl_offset') ?? 0);
  const replicas = [...fields.entries()]
    .filter(([key]) => /^slave\d+$/.test(key))
    .map(([, value]) => {
      const entry = new Map(value.split(',').map((pair) => pair.split('=') as [string, string]));
      return {
        host: entry.get('ip') ?? '',
        port: Number(entry.get('port') ?? 6379),
        state: entry.get('state') ?? 'unknown',
        lagSeconds: Number(entry.get('lag') ?? 0),
        behindBytes: Math.max(0, head - Number(entry.get('offset') ?? head)),
      };
    });
  return { primary, primaryPort, replicas };
}

/** The `Degraded` condition of a replicated database (its status and reason), as replicationStatusOf decides it. */
export interface DegradedCondition {
  status: 'True' | 'False';
  reason: 'Replicated' | 'ReplicaMissing' | 'ReplicaLagging' | 'PrimaryUnknown';
  message: string;
}

/** A pod's name from its DNS name under a headless Service (`redis-cache-1.redis-cache-headless.shop.svc…`). */
const podName = (host: string) => host.split('.')[0] ?? host;

/**
 * What a replicated database's status says of its servers (docs/operations.md, "KV databases: replicas and failover"): the
 * primary's pod, each replica's pod, state and lag, and the `Degraded` condition: `True` when no primary is known
 * (`PrimaryUnknown`: the probe failed), fewer replicas are online than `replicas - 1` (`ReplicaMissing`), or one
 * acknowledged nothing for over {@link REPLICA_LAG_LIMIT_SECONDS} (`ReplicaLagging`); `False` (`Replicated`) otherwise.
 * @param replicas the servers the spec asks for (primary included)
 * @param probed the primary's view, or the reason it could not be read
 */
export function replicationStatusOf(replicas: number, probed: ReplicationInfo | { error: string }): { status: Pick<KvDatabaseStatus, 'primary' | 'replicas'>; degraded: DegradedCondition } {
  if ('error' in probed) return { status: {}, degraded: { status: 'True', reason: 'PrimaryUnknown', message: `no primary could be read: ${probed.error}` } };
  const status = {
    primary: podName(probed.primary),
    replicas: probed.replicas.map((r) => ({ name: podName(r.host), state: r.state, lagSeconds: r.lagSeconds, behindBytes: r.behindBytes })).sort((a, b) => a.name.localeCompare(b.name)),
  };
  const online = probed.replicas.filter((r) => r.state === 'online');
  if (online.length < replicas - 1) {
    return { status, degraded: { status: 'True', reason: 'ReplicaMissing', message: `${online.length} of ${replicas - 1} replicas online` } };
  }
  const lagging = online.filter((r) => r.lagSeconds > REPLICA_LAG_LIMIT_SECONDS);
  if (lagging.length > 0) {
    return { status, degraded: { status: 'True', reason: 'ReplicaLagging', message: `${lagging.map((r) => `${podName(r.host)} (${r.lagSeconds} s)`).join(', ')} acknowledged nothing for over ${REPLICA_LAG_LIMIT_SECONDS} s` } };
  }
  return { status, degraded: { status: 'False', reason: 'Replicated', message: `${online.length} replicas online, in step with ${status.primary}` } };
}

/** What {@link ReplicationWatcher} reads and writes. */
export interface ReplicationPorts {
  /** A KvDatabase from the informer's cache. */
  database(namespace: string, name: string): KvDatabase | undefined;
  /** The database's registry URL (the sentinels' `redis+sentinel://`), or undefined while it is not registered. */
  sourceUrl(namespace: string, name: string): Promise<string | undefined>;
  /** The primary the sentinels name and its `INFO replication` (parseReplicationInfo). @throws when unreachable */
  probe(url: string): Promise<ReplicationInfo>;
  /** Merges `status` into the KvDatabase's status subresource (its conditions list replaced whole). */
  patchStatus(database: KvDatabase, status: Partial<KvDatabaseStatus>): Promise<void>;
  /**
   * The database's server pods with their revisions, its StatefulSet's current revision, and whether the sentinels'
   * StatefulSet is settled (every pod on its current revision and ready); undefined while the StatefulSet is missing.
   */
  servers(database: KvDatabase): Promise<{ pods: ServerPod[]; updateRevision: string; sentinelsSettled: boolean } | undefined>;
  /** Deletes a server pod (its StatefulSet makes it again from the current template). */
  deletePod(namespace: string, name: string): Promise<void>;
  /**
   * A planned failover of the database at `url` away from its primary, losing no acknowledged write: writes paused on
   * the primary until every replica has them, the sentinels asked to fail over, the old primary made a replica of the
   * new one. @throws when the sentinels do not promote a replica in time (the primary takes writes again)
   */
  failover(url: string): Promise<void>;
  /** Records a Kubernetes Event on the database and logs it (best effort). */
  event(database: KvDatabase, reason: string, message: string): Promise<void>;
}

/** How often a replicated database's servers are looked at (ms). */
export const REPLICATION_CHECK_MS = 10_000;
/** How often while its servers roll onto a new template (ms). */
export const UPGRADE_CHECK_MS = 2_000;

/**
 * Keeps a replicated database's status true to its servers (docs/operations.md, "KV databases: replicas and failover"): every
 * {@link REPLICATION_CHECK_MS} it asks the sentinels for the primary and the primary for its replicas, and writes the
 * primary, the replicas with their lag (as of the last write), and the `Degraded` condition (replicationStatusOf) when
 * the primary, a replica's state or the condition changed. The `Ready` condition stays the tenant pass's.
 */
export class ReplicationWatcher {
  constructor(
    private readonly ports: ReplicationPorts,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /**
   * One look at KvDatabase `namespace/name`: its status, then one step of a rolling upgrade when its servers do not
   * all run their StatefulSet's current template (nextUpgradeStep: replicas, a failover, the old primary).
   * @returns ms until the next look, or undefined for a database that is not (or no longer) replicated
   * @throws Error when the API server or the registry fails (the caller retries)
   */
  async reconcile(namespace: string, name: string): Promise<number | undefined> {
    const database = this.ports.database(namespace, name);
    const replicas = database?.spec.redis.managed?.replicas ?? 1;
    if (!database || replicas < 2 || database.metadata.deletionTimestamp) return undefined;
    const url = await this.ports.sourceUrl(namespace, name);
    if (!url) return REPLICATION_CHECK_MS;
    const probed = await this.ports.probe(url).catch((error: unknown) => ({ error: error instanceof Error ? error.message : String(error) }));
    const { status, degraded } = replicationStatusOf(replicas, probed);
    const conditions = setCondition(database.status?.conditions as Condition[] | undefined, { type: 'Degraded', ...degraded }, database.metadata.generation ?? 0, this.now());
    // Written when the primary, a replica's state or the condition changed, not for every change of a lag: each
    // status write is a watch event that queues the namespace's pass.
    const shape = (s: Pick<KvDatabaseStatus, 'primary' | 'replicas'>, c: unknown) => ({ primary: s.primary, replicas: s.replicas?.map((r) => [r.name, r.state]), conditions: c });
    if (statusChanged(shape(database.status ?? {}, database.status?.conditions), shape(status, conditions))) {
      await this.ports.patchStatus(database, { primary: status.primary, replicas: status.replicas, conditions });
    }
    const step = await this.upgradeStep(database, replicas, 'error' in probed ? undefined : { primary: status.primary, online: probed.replicas.filter((r) => r.state === 'online').length });
    if (step.kind === 'done') return REPLICATION_CHECK_MS;
    if (step.kind === 'delete') {
      await this.ports.event(database, 'UpgradingReplica', `deleting ${step.pod} to start it on the current template: ${step.reason}`);
      await this.ports.deletePod(namespace, step.pod);
    } else if (step.kind === 'failover') {
      await this.ports.event(database, 'UpgradeFailover', `failing over from ${step.from} (writes paused until a replica has them all): ${step.reason}`);
      await this.ports.failover(url);
    }
    return UPGRADE_CHECK_MS;
  }

  private async upgradeStep(database: KvDatabase, replicas: number, replication: { primary: string | undefined; online: number } | undefined): Promise<UpgradeStep> {
    const servers = await this.ports.servers(database);
    if (!servers) return { kind: 'done' };
    return nextUpgradeStep({
      ...servers,
      replicas,
      primary: replication?.primary,
      onlineReplicas: replication?.online ?? 0,
    });
  }
}
