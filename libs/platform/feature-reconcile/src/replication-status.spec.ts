import { KINDS, type KvDatabase } from '@restash/shared/util-resources';
import { ReplicationWatcher, parseReplicationInfo, replicationStatusOf } from './replication-status';

const host = (pod: string) => `${pod}.redis-cache-headless.shop.svc.cluster.local`;
const info = (lines: string[]) => ['# Replication', 'role:master', `connected_slaves:${lines.length}`, ...lines, 'master_repl_offset:5000', ''].join('\r\n');

describe('parseReplicationInfo', () => {
  it("reads each replica's host, state, lag and bytes behind the primary", () => {
    const parsed = parseReplicationInfo(info([`slave0:ip=${host('redis-cache-1')},port=6379,state=online,offset=4900,lag=0`, `slave1:ip=${host('redis-cache-2')},port=6379,state=wait_bgsave,offset=0,lag=3`]), host('redis-cache-0'));
    expect(parsed).toEqual({
      primary: host('redis-cache-0'),
      primaryPort: 6379,
      replicas: [
        { host: host('redis-cache-1'), port: 6379, state: 'online', lagSeconds: 0, behindBytes: 100 },
        { host: host('redis-cache-2'), port: 6379, state: 'wait_bgsave', lagSeconds: 3, behindBytes: 5000 },
      ],
    });
  });
});

describe('replicationStatusOf', () => {
  const online = (pod: string, lag = 0) => ({ host: host(pod), port: 6379, state: 'online', lagSeconds: lag, behindBytes: 0 });

  it('names the pods and is not Degraded with every replica online and in step', () => {
    const { status, degraded } = replicationStatusOf(3, { primary: host('redis-cache-1'), primaryPort: 6379, replicas: [online('redis-cache-2'), online('redis-cache-0')] });
    expect(status).toEqual({ primary: 'redis-cache-1', replicas: [{ name: 'redis-cache-0', state: 'online', lagSeconds: 0, behindBytes: 0 }, { name: 'redis-cache-2', state: 'online', lagSeconds: 0, behindBytes: 0 }] });
    expect(degraded).toEqual({ status: 'False', reason: 'Replicated', message: '2 replicas online, in step with redis-cache-1' });
  });

  it('is Degraded when a replica is missing or syncing, lagging, or no primary is known', () => {
    expect(replicationStatusOf(3, { primary: host('redis-cache-0'), primaryPort: 6379, replicas: [online('redis-cache-1')] }).degraded).toMatchObject({ status: 'True', reason: 'ReplicaMissing', message: '1 of 2 replicas online' });
    expect(replicationStatusOf(2, { primary: host('redis-cache-0'), primaryPort: 6379, replicas: [online('redis-cache-1', 11)] }).degraded).toMatchObject({ status: 'True', reason: 'ReplicaLagging', message: 'redis-cache-1 (11 s) acknowledged nothing for over 10 s' });
    expect(replicationStatusOf(2, { error: 'connect ECONNREFUSED' })).toEqual({ status: {}, degraded: { status: 'True', reason: 'PrimaryUnknown', message: 'no primary could be read: connect ECONNREFUSED' } });
  });
});

/** The upgrade ports of a database whose servers all run their current template: nothing to roll. */
const settled = {
  servers: async () => ({ pods: [{ name: 'redis-cache-0', revision: 'r1', ready: true }, { name: 'redis-cache-1', revision: 'r1', ready: true }], updateRevision: 'r1', sentinelsSettled: true }),
  deletePod: async () => Promise.reject(new Error('nothing to delete')),
  failover: async () => Promise.reject(new Error('nothing to fail over')),
  event: async () => undefined,
};

describe('ReplicationWatcher', () => {
  const database = (status?: KvDatabase['status']): KvDatabase => ({
    apiVersion: 'restash.dev/v1alpha1',
    kind: 'KvDatabase',
    metadata: { name: 'cache', namespace: 'shop', generation: 2 },
    spec: KINDS.KvDatabase.spec.parse({ redis: { managed: { replicas: 2 } } }) as KvDatabase['spec'],
    ...(status ? { status } : {}),
  });

  it('writes the primary, the replicas and Degraded, then nothing while only lags change', async () => {
    let db = database();
    const patches: Array<Partial<NonNullable<KvDatabase['status']>>> = [];
    let lag = 0;
    const watcher = new ReplicationWatcher({
      database: () => db,
      sourceUrl: async () => 'redis+sentinel://gw:pw@10.0.0.9:26379/cache/0?sentinelPassword=s',
      probe: async () => ({ primary: host('redis-cache-0'), primaryPort: 6379, replicas: [{ host: host('redis-cache-1'), port: 6379, state: 'online', lagSeconds: lag, behindBytes: lag * 10 }] }),
      patchStatus: async (_, status) => {
        patches.push(status);
        db = { ...db, status: { ...db.status, ...status } };
      },
      ...settled,
    });
    await expect(watcher.reconcile('shop', 'cache')).resolves.toBe(10_000);
    expect(patches[0]).toMatchObject({ primary: 'redis-cache-0', replicas: [{ name: 'redis-cache-1', state: 'online' }], conditions: [{ type: 'Degraded', status: 'False', reason: 'Replicated' }] });
    lag = 1;
    await watcher.reconcile('shop', 'cache');
    expect(patches).toHaveLength(1);
    lag = 30;
    await watcher.reconcile('shop', 'cache');
    expect(patches[1]?.conditions?.[0]).toMatchObject({ type: 'Degraded', status: 'True', reason: 'ReplicaLagging' });
  });

  it('marks a database whose primary cannot be read Degraded, and leaves a single server alone', async () => {
    const patches: unknown[] = [];
    const ports = { ...settled, sourceUrl: async () => 'redis+sentinel://x/cache', probe: async () => Promise.reject(new Error('all sentinels are unreachable')), patchStatus: async (_: unknown, s: unknown) => void patches.push(s) };
    await new ReplicationWatcher({ ...ports, database: () => database() }).reconcile('shop', 'cache');
    expect(patches).toEqual([expect.objectContaining({ conditions: [expect.objectContaining({ type: 'Degraded', status: 'True', reason: 'PrimaryUnknown', message: 'no primary could be read: all sentinels are unreachable' })] })]);
    const single = { ...database(), spec: KINDS.KvDatabase.spec.parse({}) as KvDatabase['spec'] };
    await expect(new ReplicationWatcher({ ...ports, database: () => single }).reconcile('shop', 'cache')).resolves.toBeUndefined();
  });
});

describe('ReplicationWatcher: rolling upgrades', () => {
  it('rolls a 3-server database onto a new template: replicas (highest first), a failover, then the old primary', async () => {
    const db: KvDatabase = { apiVersion: 'restash.dev/v1alpha1', kind: 'KvDatabase', metadata: { name: 'cache', namespace: 'shop', generation: 1 }, spec: KINDS.KvDatabase.spec.parse({ redis: { managed: { replicas: 3 } } }) as KvDatabase['spec'] };
    // A fake StatefulSet: a deleted pod comes back on the current revision; a failover moves the primary to pod 1.
    const revisions = new Map([['redis-cache-0', 'old'], ['redis-cache-1', 'old'], ['redis-cache-2', 'old']]);
    let primary = 'redis-cache-0';
    const steps: string[] = [];
    const watcher = new ReplicationWatcher({
      database: () => db,
      sourceUrl: async () => 'redis+sentinel://x/cache',
      probe: async () => ({ primary: host(primary), primaryPort: 6379, replicas: [...revisions.keys()].filter((p) => p !== primary).map((p) => ({ host: host(p), port: 6379, state: 'online', lagSeconds: 0, behindBytes: 0 })) }),
      patchStatus: async () => undefined,
      servers: async () => ({ pods: [...revisions].map(([name, revision]) => ({ name, revision, ready: true })), updateRevision: 'new', sentinelsSettled: true }),
      deletePod: async (_, pod) => {
        steps.push(`delete ${pod}`);
        revisions.set(pod, 'new');
      },
      failover: async () => {
        steps.push(`failover from ${primary}`);
        primary = 'redis-cache-1';
      },
      event: async () => undefined,
    });
    for (let i = 0; i < 4; i++) await expect(watcher.reconcile('shop', 'cache')).resolves.toBe(2_000);
    await expect(watcher.reconcile('shop', 'cache')).resolves.toBe(10_000);
    expect(steps).toEqual(['delete redis-cache-2', 'delete redis-cache-1', 'failover from redis-cache-0', 'delete redis-cache-0']);
  });
});
