import { newMessageId } from '@restash/queue/util-message';
import { MAIN_QUEUE_SERVER, QueueServerPool, queueHomeKey, rendezvousServer } from './queue-servers';
import { TEST_STORE_OPTIONS, useQueueRedis } from './testing/queue-redis';

/**
 * The placement of queue projects on several queue Redis servers (docs/queue.md, "Queue: several queue Redis
 * servers"): QueuePlacement through QueueServerPool on three real Redis servers, and the purge of a placed project.
 */
describe('QueueServerPool on several queue Redis servers', () => {
  const pools: QueueServerPool[] = [];
  const main = useQueueRedis(() => Promise.all(pools.map((p) => p.close())));
  const q2 = useQueueRedis();
  const q3 = useQueueRedis();
  const home = (project: string) => queueHomeKey(TEST_STORE_OPTIONS.prefix, project);
  const pool = (names: string[]) => {
    const servers = { [MAIN_QUEUE_SERVER]: main, q2, q3 };
    const created = new QueueServerPool(
      names.map((name) => ({ name, url: servers[name as keyof typeof servers].server.url })),
      TEST_STORE_OPTIONS,
      () => undefined,
    );
    pools.push(created);
    return created;
  };
  /** Which servers hold a project's home key. */
  const homes = async (project: string) => {
    const found: string[] = [];
    for (const [name, server] of [[MAIN_QUEUE_SERVER, main], ['q2', q2], ['q3', q3]] as const) if ((await server.redis.exists(home(project))) === 1) found.push(name);
    return found;
  };

  it('spreads new projects over the servers by rendezvous hashing and writes the home key where each goes', async () => {
    const two = pool([MAIN_QUEUE_SERVER, 'q2']);
    const projects = Array.from({ length: 40 }, (_, i) => `spread.p${i}`);
    const placed = await Promise.all(projects.map((p) => two.place(p, false)));
    expect(placed).toEqual(projects.map((p) => rendezvousServer(p, [MAIN_QUEUE_SERVER, 'q2'])));
    const onMain = placed.filter((s) => s === MAIN_QUEUE_SERVER).length;
    expect(onMain).toBeGreaterThan(8);
    expect(onMain).toBeLessThan(32);
    for (const [i, project] of projects.entries()) expect(await homes(project)).toEqual([placed[i]]);
  });

  it('keeps a project on the server of its home key when servers are added, and places it alike again', async () => {
    const two = pool([MAIN_QUEUE_SERVER, 'q2']);
    const projects = Array.from({ length: 30 }, (_, i) => `grow.p${i}`);
    const before = await Promise.all(projects.map((p) => two.place(p, false)));
    const three = pool([MAIN_QUEUE_SERVER, 'q2', 'q3']);
    // The registry lost the records (a control Redis restarted empty): each project is found where it is.
    expect(await Promise.all(projects.map((p) => three.place(p, false)))).toEqual(before);
    // New projects do reach the added server.
    const fresh = await Promise.all(Array.from({ length: 30 }, (_, i) => three.place(`grow.new${i}`, false)));
    expect(fresh).toContain('q3');
  });

  it('leaves a project registered before servers had names on main, where its data was written', async () => {
    const three = pool([MAIN_QUEUE_SERVER, 'q2', 'q3']);
    // A name that rendezvous hashing would put elsewhere, so that the test can tell.
    const project = Array.from({ length: 50 }, (_, i) => `legacy.p${i}`).find((p) => rendezvousServer(p, [MAIN_QUEUE_SERVER, 'q2', 'q3']) !== MAIN_QUEUE_SERVER) as string;
    expect(await three.place(project, true)).toBe(MAIN_QUEUE_SERVER);
    expect(await homes(project)).toEqual([MAIN_QUEUE_SERVER]);
  });

  it('refuses to place while a server cannot be asked, and to reach a server it is not configured with', async () => {
    const broken = new QueueServerPool(
      [
        { name: MAIN_QUEUE_SERVER, url: main.server.url },
        { name: 'away', url: 'redis://127.0.0.1:1' },
      ],
      TEST_STORE_OPTIONS,
      () => undefined,
      0,
    );
    try {
      await expect(broken.place('away.p', false)).rejects.toThrow(/queue server 'away' cannot be reached/);
      expect(await homes('away.p')).toEqual([]);
      expect(() => broken.store('q9')).toThrow(/queue server 'q9' is not configured/);
    } finally {
      await broken.close();
    }
  });

  it('purges a project on its own server, home key included', async () => {
    const two = pool([MAIN_QUEUE_SERVER, 'q2']);
    const project = Array.from({ length: 50 }, (_, i) => `purge.p${i}`).find((p) => rendezvousServer(p, [MAIN_QUEUE_SERVER, 'q2']) === 'q2') as string;
    expect(await two.place(project, false)).toBe('q2');
    const now = Date.now();
    await two
      .store('q2')
      .publish({ messageId: newMessageId(), project, url: 'http://127.0.0.1:9/hook', method: 'POST', header: {}, body: '', maxRetries: 0, notBefore: now + 60_000, createdAt: now, callerIp: '127.0.0.1' });
    expect(await q2.redis.exists(`${TEST_STORE_OPTIONS.prefix}:events:${project}`)).toBe(1);
    await two.store('q2').purgeProject(project);
    expect(await q2.redis.exists(home(project), `${TEST_STORE_OPTIONS.prefix}:events:${project}`)).toBe(0);
    expect(await two.store('q2').deliveries.projectMessages(project)).toEqual([]);
  });
});
