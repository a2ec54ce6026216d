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
    const ports = { sourceUrl: async () => 'redis+sentinel://x/cache', probe: async () => Promise.reject(new Error('all sentinels are unreachable')), patchStatus: async (_: unknown, s: unknown) => void patches.push(s) };
    await new ReplicationWatcher({ ...ports, database: () => database() }).reconcile('shop', 'cache');
    expect(patches).toEqual([expect.objectContaining({ conditions: [expect.objectContaining({ type: 'Degraded', status: 'True', reason: 'PrimaryUnknown', message: 'no primary could be read: all sentinels are unreachable' })] })]);
    const single = { ...database(), spec: KINDS.KvDatabase.spec.parse({}) as KvDatabase['spec'] };
    await expect(new ReplicationWatcher({ ...ports, database: () => single }).reconcile('shop', 'cache')).resolves.toBeUndefined();
  });
});
