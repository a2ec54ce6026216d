import { REGISTRY_CHANNEL, queueProjectId, queueProjectRecordSchema, registryKeys } from '@restash/shared/data-access-registry';
import { call, eventually } from '@restash/shared/util-testing';
import type { Redis } from 'ioredis';
import { queueHomeKey } from '@restash/queue/data-access-store';
import { queueTestbed } from './testing/queue-testbed';
import { nonEmpty } from './testing/sink';

/**
 * The queue on two queue Redis servers (docs/queue.md, "Queue: several queue Redis servers"): the tenants command
 * places each project (acme's on `q2`, other's on `main`: rendezvous hashing of their ids), queue-gateway serves each
 * from its server and a queue-worker per server delivers, through the same API as with one server.
 */
/** The keys under `prefix` on a server whose name holds `fragment` (a project id). */
async function scanKeysOf(redis: Redis, prefix: string, fragment: string): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*${fragment}*`, 'COUNT', 1000);
    found.push(...keys);
    cursor = next;
  } while (cursor !== '0');
  return found;
}

describe('the queue on two queue Redis servers', () => {
  const bed = queueTestbed({ acme: [{ name: 'alpha' }, { name: 'beta' }], other: [{ name: 'main' }] }, { queueServers: ['q2'] });
  const PREFIX = 'restash:queue';
  const servers = () => ({ main: bed.redis(bed.stack.queueRedis.url), q2: bed.redis((bed.stack.queueServers.get('q2') as { url: string }).url) });
  const record = async (tenant: string, project: string) => {
    const raw = await bed.redis(bed.stack.control.url).get(registryKeys.queueProject(queueProjectId(tenant, project)));
    return queueProjectRecordSchema.parse(JSON.parse(raw ?? 'null'));
  };
  const api = (tenant: string, project: string, path: string, init: Parameters<typeof call>[1] = {}) =>
    call(`${bed.stack.url}${path}`, { token: bed.stack.secrets(tenant, project).token, ...init });

  it('places each project on one server, named in its record and marked by its home key there only', async () => {
    const { main, q2 } = servers();
    for (const [tenant, project, server] of [['acme', 'alpha', 'q2'], ['acme', 'beta', 'q2'], ['other', 'main', 'main']] as const) {
      expect((await record(tenant, project)).queueServer).toBe(server);
      const home = queueHomeKey(PREFIX, queueProjectId(tenant, project));
      expect([await main.exists(home), await q2.exists(home)]).toEqual(server === 'main' ? [1, 0] : [0, 1]);
    }
  });

  it('publishes, delivers and reads each project on its own server, flow control and queues included', async () => {
    const { main, q2 } = servers();
    const sent: Array<[string, string, string]> = [];
    for (const [tenant, project] of [['acme', 'alpha'], ['other', 'main']] as const) {
      const plain = await api(tenant, project, `/v2/publish/${bed.sink.url}/${tenant}/plain`, { method: 'POST', raw: 'hello' });
      const flow = await api(tenant, project, `/v2/publish/${bed.sink.url}/${tenant}/flow`, { method: 'POST', raw: 'x', headers: { 'Upstash-Flow-Control-Key': 'k', 'Upstash-Flow-Control-Value': 'parallelism=1' } });
      const queued = await api(tenant, project, `/v2/enqueue/jobs/${bed.sink.url}/${tenant}/queued`, { method: 'POST', raw: 'y' });
      for (const answer of [plain, flow, queued]) expect(answer.status).toBe(201);
      for (const [answer, path] of [[plain, 'plain'], [flow, 'flow'], [queued, 'queued']] as const) sent.push([tenant, project, `${(answer.body as { messageId: string }).messageId} ${path}`]);
    }
    for (const tenant of ['acme', 'other']) for (const path of ['plain', 'flow', 'queued']) await eventually(() => nonEmpty(bed.sink.on(`/${tenant}/${path}`)), 20_000);
    for (const [tenant, project, sentMessage] of sent) {
      const [messageId] = sentMessage.split(' ');
      await eventually(async () => {
        const logs = await api(tenant, project, `/v2/events?messageId=${messageId}`);
        expect((logs.body as { events: Array<{ state: string }> }).events.map((e) => e.state)).toContain('DELIVERED');
      }, 10_000);
      // Another tenant's token does not reach it, on either server.
      const stranger = tenant === 'acme' ? ['other', 'main'] : ['acme', 'alpha'];
      expect((await api(stranger[0] as string, stranger[1] as string, `/v2/messages/${messageId}`)).status).toBe(404);
    }
    // Nothing of acme's projects is written on main, nothing of other's on q2.
    expect(await scanKeysOf(main, PREFIX, 'acme.')).toEqual([]);
    expect(await scanKeysOf(q2, PREFIX, 'other.')).toEqual([]);
    expect(await scanKeysOf(q2, PREFIX, 'acme.alpha')).not.toEqual([]);
  }, 60_000);

  it('keeps a schedule on its project’s server', async () => {
    const { main, q2 } = servers();
    const created = await api('acme', 'beta', `/v2/schedules/${bed.sink.url}/scheduled`, { method: 'POST', raw: 'tick', headers: { 'Upstash-Cron': '* * * * *' } });
    expect(created.status).toBe(200);
    const { scheduleId } = created.body as { scheduleId: string };
    expect((await api('acme', 'beta', '/v2/schedules')).body).toEqual([expect.objectContaining({ scheduleId })]);
    expect(await q2.hexists(`${PREFIX}:schedule-defs:acme.beta`, scheduleId)).toBe(1);
    expect(await scanKeysOf(main, PREFIX, 'acme.beta')).toEqual([]);
    expect((await api('acme', 'beta', `/v2/schedules/${scheduleId}`, { method: 'DELETE' })).status).toBe(200);
  });

  it('answers 503 in the queue API’s shape for the projects of a server that is away, and serves the others', async () => {
    const q2 = bed.stack.queueServers.get('q2');
    if (!q2) throw new Error('no q2');
    await q2.kill();
    try {
      const away = await api('acme', 'alpha', `/v2/publish/${bed.sink.url}/acme/away`, { method: 'POST', raw: 'z' });
      expect(away.status).toBe(503);
      expect(away.body).toEqual({ error: expect.any(String) });
      expect((await api('other', 'main', `/v2/publish/${bed.sink.url}/other/during`, { method: 'POST', raw: 'z' })).status).toBe(201);
      await eventually(() => nonEmpty(bed.sink.on('/other/during')), 20_000);
    } finally {
      await q2.start();
    }
    // Back with its append-only file: the project's messages and home key are there, and it is served again.
    await eventually(async () => expect((await api('acme', 'alpha', `/v2/publish/${bed.sink.url}/acme/back`, { method: 'POST', raw: 'z' })).status).toBe(201), 20_000);
    await eventually(() => nonEmpty(bed.sink.on('/acme/back')), 20_000);
  }, 90_000);

  it('answers 503, not 401 or 404, for a project whose server this gateway is not configured with', async () => {
    const control = bed.redis(bed.stack.control.url);
    const key = registryKeys.queueProject(queueProjectId('acme', 'beta'));
    const raw = (await control.get(key)) as string;
    await control.set(key, JSON.stringify({ ...JSON.parse(raw), queueServer: 'q9' }));
    await control.publish(REGISTRY_CHANNEL, key);
    try {
      await eventually(async () => {
        const answer = await api('acme', 'beta', '/v2/events');
        expect(answer.status).toBe(503);
        expect(answer.body).toEqual({ error: "Service unavailable: this project's queue server 'q9' is not configured on this gateway" });
      }, 5_000);
    } finally {
      await control.set(key, raw);
      await control.publish(REGISTRY_CHANNEL, key);
    }
  });
});
