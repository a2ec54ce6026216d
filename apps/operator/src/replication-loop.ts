import { Redis, type RedisOptions } from 'ioredis';
import { WorkQueue } from '@restash/operator/util-controller';
import { type ReplicationInfo, type ReplicationPorts, ReplicationWatcher, parseReplicationInfo } from '@restash/platform/feature-reconcile';
import { parseSentinelUrl } from '@restash/shared/util-config';
import { type EventLogger, logEvent } from '@restash/shared/util-http';

/** How long a sentinel or a primary may take to answer the probe (ms). */
const PROBE_TIMEOUT_MS = 2_000;

/**
 * The primary of a replicated database and its replicas: the sentinels of its `redis+sentinel://` URL (each in turn)
 * name the primary, whose `INFO replication` lists the replicas (parseReplicationInfo).
 * @throws Error when no sentinel names a primary or the primary does not answer
 */
export async function probeReplication(url: string): Promise<ReplicationInfo> {
  const target = parseSentinelUrl(url);
  if (!target) throw new Error('not a Redis Sentinel URL');
  const quick = { lazyConnect: true, connectTimeout: PROBE_TIMEOUT_MS, commandTimeout: PROBE_TIMEOUT_MS, maxRetriesPerRequest: 0, retryStrategy: () => null };
  const ask = async (options: RedisOptions, call: (client: Redis) => Promise<unknown>) => {
    const client = new Redis({ ...options, ...quick });
    client.on('error', () => undefined); // the failure is the call's
    try {
      await client.connect();
      return await call(client);
    } finally {
      client.disconnect();
    }
  };
  let lastError: unknown = new Error('no sentinel in the URL');
  for (const sentinel of target.sentinels) {
    try {
      const named = (await ask({ host: sentinel.host, port: sentinel.port, ...(target.sentinelUsername ? { username: target.sentinelUsername } : {}), ...(target.sentinelPassword ? { password: target.sentinelPassword } : {}) }, (c) => c.call('SENTINEL', 'get-master-addr-by-name', target.name))) as [string, string] | null;
      if (!named) throw new Error(`the sentinels know no primary ${target.name}`);
      const [host, port] = named;
      const info = (await ask({ host, port: Number(port), ...(target.username ? { username: target.username } : {}), ...(target.password ? { password: target.password } : {}) }, (c) => c.info('replication'))) as string;
      return parseReplicationInfo(info, host, Number(port));
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}

/**
 * The operator's replication loop: a work queue of replicated KvDatabases (fed by the KvDatabase informer,
 * {@link databaseChanged}), each looked at again every REPLICATION_CHECK_MS by feature-reconcile's ReplicationWatcher.
 */
export class ReplicationLoop {
  private readonly queue: WorkQueue<string>;

  constructor(ports: ReplicationPorts, log: EventLogger, describeError: (error: unknown) => unknown) {
    const watcher = new ReplicationWatcher(ports);
    this.queue = new WorkQueue<string>({
      workers: 1,
      handler: async (key) => {
        const [namespace = '', name = ''] = key.split('/');
        const ms = await watcher.reconcile(namespace, name);
        return ms === undefined ? 'done' : { requeueAfterMs: ms };
      },
      onResult: (report) => {
        if (report.outcome === 'error') logEvent(log, 'warn', 'replication.check-failed', { engine: 'kubernetes', database: report.key, error: describeError(report.error), retryInMs: report.retryInMs });
      },
    });
  }

  /** A KvDatabase changed (or was resynced): looked at now. */
  databaseChanged(namespace: string, name: string): void {
    this.queue.add(`${namespace}/${name}`);
  }

  async stop(): Promise<void> {
    await this.queue.shutDown();
  }
}

/**
 * A direct `redis://` URL of one server of a Redis Sentinel deployment, for a snapshot (a replica serves one as well as
 * the primary, and spares it the fork): an online replica the primary lists, else the primary; the sentinel URL's
 * credentials and logical database.
 * @throws Error as probeReplication
 */
export async function snapshotSourceOf(url: string): Promise<string> {
  const target = parseSentinelUrl(url);
  if (!target) return url;
  const { primary, primaryPort, replicas } = await probeReplication(url);
  const replica = replicas.find((r) => r.state === 'online');
  const [host, port] = replica ? [replica.host, replica.port] : [primary, primaryPort];
  const auth = target.password === undefined ? '' : `${encodeURIComponent(target.username ?? '')}:${encodeURIComponent(target.password)}@`;
  return `${target.tls ? 'rediss' : 'redis'}://${auth}${host.includes(':') ? `[${host}]` : host}:${port}/${target.db}`;
}
