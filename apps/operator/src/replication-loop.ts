import { Redis, type RedisOptions } from 'ioredis';
import { WorkQueue } from '@restash/operator/util-controller';
import { type ReplicationInfo, type ReplicationPorts, ReplicationWatcher, parseReplicationInfo } from '@restash/platform/feature-reconcile';
import { parseSentinelUrl } from '@restash/shared/util-config';
import { type EventLogger, logEvent } from '@restash/shared/util-http';

/** How long a sentinel or a primary may take to answer the probe (ms). */
const PROBE_TIMEOUT_MS = 2_000;

const QUICK: RedisOptions = { lazyConnect: true, connectTimeout: PROBE_TIMEOUT_MS, commandTimeout: PROBE_TIMEOUT_MS, maxRetriesPerRequest: 0, retryStrategy: () => null };

/** Runs `call` on a new connection of `options` (no retries, {@link PROBE_TIMEOUT_MS}), closed after it. */
async function ask<T>(options: RedisOptions, call: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis({ ...options, ...QUICK });
  client.on('error', () => undefined); // the failure is the call's
  try {
    await client.connect();
    return await call(client);
  } finally {
    client.disconnect();
  }
}

/** Connection options of the sentinels and of the servers of a Sentinel URL. */
function endpoints(url: string) {
  const target = parseSentinelUrl(url);
  if (!target) throw new Error('not a Redis Sentinel URL');
  const sentinelAuth = { ...(target.sentinelUsername ? { username: target.sentinelUsername } : {}), ...(target.sentinelPassword ? { password: target.sentinelPassword } : {}) };
  const serverAuth = { ...(target.username ? { username: target.username } : {}), ...(target.password ? { password: target.password } : {}) };
  return {
    target,
    sentinels: target.sentinels.map((s): RedisOptions => ({ host: s.host, port: s.port, ...sentinelAuth })),
    server: (host: string, port: number): RedisOptions => ({ host, port, ...serverAuth }),
  };
}

/**
 * The primary of a replicated database and its replicas: the sentinels of its `redis+sentinel://` URL (each in turn)
 * name the primary, whose `INFO replication` lists the replicas (parseReplicationInfo).
 * @throws Error when no sentinel names a primary or the primary does not answer
 */
export async function probeReplication(url: string): Promise<ReplicationInfo> {
  const { target, sentinels, server } = endpoints(url);
  let lastError: unknown = new Error('no sentinel in the URL');
  for (const sentinel of sentinels) {
    try {
      const named = (await ask(sentinel, (c) => c.call('SENTINEL', 'get-master-addr-by-name', target.name))) as [string, string] | null;
      if (!named) throw new Error(`the sentinels know no primary ${target.name}`);
      const [host, port] = named;
      const info = (await ask(server(host, Number(port)), (c) => c.info('replication'))) as string;
      return parseReplicationInfo(info, host, Number(port));
    } catch (error) {
      lastError = error;
    }
  }
  throw lastError;
}

/** Longest time a planned failover keeps the primary's writes paused (ms): the gateways' writes wait meanwhile. */
export const FAILOVER_PAUSE_MS = 15_000;

/**
 * A planned failover of the Sentinel deployment at `url` (a rolling upgrade's, docs/operations.md, "KV databases: upgrades"), losing
 * no acknowledged write: `CLIENT PAUSE … WRITE` on the primary (writes wait, reads go on), until every replica's
 * offset reached the primary's; then `SENTINEL FAILOVER` (the sentinels promote the best replica, which has everything);
 * once a sentinel names the new primary, the old one is made its replica at once (`REPLICAOF`, as the sentinels would
 * a little later) and unpaused: the writes that waited there get READONLY, which the gateways answer with 503, and
 * their clients' retries reach the new primary.
 * @throws Error when a replica does not catch up or no new primary is named within {@link FAILOVER_PAUSE_MS} (the
 *   primary is unpaused and stays the primary)
 */
export async function plannedFailover(url: string, sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))): Promise<void> {
  const { target, sentinels, server } = endpoints(url);
  const before = await probeReplication(url);
  const primary = new Redis({ ...server(before.primary, before.primaryPort), ...QUICK });
  primary.on('error', () => undefined);
  const deadline = Date.now() + FAILOVER_PAUSE_MS - 1_000;
  try {
    await primary.connect();
    await primary.call('CLIENT', 'PAUSE', String(FAILOVER_PAUSE_MS), 'WRITE');
    for (;;) {
      const { replicas } = parseReplicationInfo((await primary.info('replication')) as string, before.primary, before.primaryPort);
      if (replicas.some((r) => r.state === 'online') && replicas.every((r) => r.state !== 'online' || r.behindBytes === 0)) break;
      if (Date.now() > deadline) throw new Error('no online replica caught up with the paused primary');
      await sleep(50);
    }
    let asked: unknown = new Error('no sentinel in the URL');
    for (const sentinel of sentinels) {
      asked = await ask(sentinel, (c) => c.call('SENTINEL', 'FAILOVER', target.name)).then(() => undefined, (error: unknown) => error);
      if (asked === undefined) break;
    }
    if (asked !== undefined) throw asked;
    for (;;) {
      const named = (await Promise.any(sentinels.map((s) => ask(s, (c) => c.call('SENTINEL', 'get-master-addr-by-name', target.name)))).catch(() => null)) as [string, string] | null;
      if (named && named[0] !== before.primary) {
        await primary.call('REPLICAOF', named[0], named[1]);
        return;
      }
      if (Date.now() > deadline) throw new Error(`the sentinels named no new primary within ${FAILOVER_PAUSE_MS} ms`);
      await sleep(100);
    }
  } finally {
    await primary.call('CLIENT', 'UNPAUSE').catch(() => undefined);
    primary.disconnect();
  }
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
