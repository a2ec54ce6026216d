import { type SentinelGroup, startSentinelGroup } from '@restash/platform/util-stack';
import { eventually } from '@restash/shared/util-testing';
import { probeReplication, snapshotSourceOf } from './replication-loop';

/** The replication probe on a real Redis Sentinel group (a primary, a replica, three sentinels on loopback). */
describe('probeReplication', () => {
  let group: SentinelGroup;

  beforeAll(async () => {
    group = await startSentinelGroup('orders');
  }, 60_000);
  afterAll(() => group?.stop());

  it('names the primary the sentinels name and its replica, online', async () => {
    const probed = await eventually(async () => {
      const info = await probeReplication(group.url());
      if (info.replicas[0]?.state !== 'online') throw new Error(`replica not online yet: ${JSON.stringify(info)}`);
      return info;
    }, 20_000, 200);
    expect(probed.primary).toBe('127.0.0.1');
    expect(probed.replicas).toEqual([{ host: '127.0.0.1', port: group.servers[1].port, state: 'online', lagSeconds: expect.any(Number), behindBytes: expect.any(Number) }]);
    expect(probed.primaryPort).toBe(await group.primaryPort());
    // A snapshot is taken from the online replica.
    expect(await snapshotSourceOf(group.url(2))).toBe(`redis://127.0.0.1:${group.servers[1].port}/2`);
    expect(await snapshotSourceOf('redis://127.0.0.1:6379/0')).toBe('redis://127.0.0.1:6379/0');
    expect(Number(probed.replicas[0]?.behindBytes)).toBeGreaterThanOrEqual(0);
  });

  it('fails with the reason when the sentinels know no such primary, or none answers', async () => {
    await expect(probeReplication(group.url().replace('/orders', '/elsewhere'))).rejects.toThrow('the sentinels know no primary elsewhere');
    await expect(probeReplication('redis+sentinel://127.0.0.1:1/orders')).rejects.toThrow(/ECONNREFUSED|Connection is closed/);
    await expect(probeReplication('redis://127.0.0.1:6379')).rejects.toThrow('not a Redis Sentinel URL');
  });
});
