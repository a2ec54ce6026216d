import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RegistrySeal } from '@restash/shared/data-access-registry';
import { eventually } from '@restash/shared/util-testing';
import { type AppProcess, QUEUE_REDIS_CONFIG, type RedisServer, startApp, startRedisServer } from '@restash/platform/util-stack';
import { registerQueueProject } from './testing/registry';

/** One JSON log line as the services write it (Nest ConsoleLogger in JSON mode, util-http logEvent). */
interface LogLine {
  level: string;
  context?: string;
  message: { event?: string; engine?: string; tenant?: string; error?: { message: string; code?: string } } | string;
}

/**
 * The queue's services (queue-worker and queue-gateway, each its own process from source, logging to a file) through
 * an outage of both their Redis servers (issue 31, "Logs"): every line they write is JSON, none is ioredis's
 * `[ioredis] Unhandled error event` nor a stack trace (BullMQ prints the errors of a Queue without an `error` listener
 * raw, with their stack), and the outage is logged as `engine.error` events naming the engine, the gateway's failed
 * call with the tenant.
 */
describe('queue-worker and queue-gateway logs when their Redis servers go away', () => {
  let control: RedisServer;
  let queueRedis: RedisServer;
  let worker: AppProcess | undefined;
  let gateway: AppProcess | undefined;
  let dir: string;
  let token: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'restash-logs-'));
    [control, queueRedis] = await Promise.all([startRedisServer({ config: ['appendonly yes', 'appendfsync always'] }), startRedisServer({ config: QUEUE_REDIS_CONFIG })]);
    const sealKey = RegistrySeal.generateKey();
    ({ standard: token } = await registerQueueProject(control.url, sealKey));
    const env = { CONTROL_REDIS_URL: control.url, REGISTRY_SEAL_KEY: sealKey, QUEUE_REDIS_URL: queueRedis.url, LOG_LEVEL: 'log' };
    worker = await startApp('queue-worker', { from: 'source', env: { ...env, DESTINATION_ALLOWLIST: '127.0.0.1/32' }, logFile: join(dir, 'queue-worker.log') });
    gateway = await startApp('queue-gateway', { from: 'source', env, logFile: join(dir, 'queue-gateway.log') });
  }, 180_000);

  afterAll(async () => {
    await Promise.all([worker?.stop(), gateway?.stop()]);
    await Promise.all([control?.stop(), queueRedis?.stop()]);
    await rm(dir, { recursive: true, force: true });
  });

  /** The gateway's answer to a request of the test tenant that reads the queue store. */
  const listQueues = async () => (await fetch(`${gateway?.url}/v2/queues`, { headers: { authorization: `Bearer ${token}` } })).status;

  const readyz = async (app: AppProcess | undefined) => (await fetch(`${app?.managementUrl}/readyz`)).status;

  it('writes JSON lines only, with engine.error events naming each engine and the failed call naming the tenant', async () => {
    expect(await listQueues()).toBe(200); // the token's record is cached from here on (REGISTRY_CACHE_TTL_MS 30 s)
    await queueRedis.kill();
    expect(await listQueues()).toBe(503);
    await control.kill();
    // Both services retry their connections meanwhile (ioredis reconnects, BullMQ's workers and queues report each failure).
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(await listQueues()).toBe(503);
    await Promise.all([control.start(), queueRedis.start()]);
    await eventually(async () => expect([await readyz(worker), await readyz(gateway)]).toEqual([200, 200]), 30_000, 200);
    await Promise.all([worker?.stop(), gateway?.stop()]);

    for (const app of ['queue-worker', 'queue-gateway']) {
      const text = await readFile(join(dir, `${app}.log`), 'utf8');
      expect(text).not.toContain('[ioredis]');
      expect(text).not.toMatch(/\n\s+at /); // no stack frame on a line of its own
      const lines = text.split('\n').filter((line) => line.trim() !== '');
      const unparsed = lines.filter((line) => {
        try {
          const parsed = JSON.parse(line) as LogLine;
          return typeof parsed.level !== 'string' || typeof parsed.message !== 'object';
        } catch {
          return true;
        }
      });
      expect({ app, unparsed }).toEqual({ app, unparsed: [] }); // every line is JSON, its message an event
      const events = lines.map((line) => (JSON.parse(line) as LogLine).message).filter((m): m is Exclude<LogLine['message'], string> => typeof m === 'object');
      expect(events.every((m) => typeof m.event === 'string' && /^[a-z-]+(\.[a-z-]+)+$/.test(m.event))).toBe(true);
      for (const engine of ['control-redis', 'queue-redis']) {
        expect({ app, engineError: events.find((m) => m.event === 'engine.error' && m.engine === engine) }).toEqual({
          app,
          engineError: expect.objectContaining({ event: 'engine.error', engine, error: expect.objectContaining({ message: expect.any(String) }) }),
        });
      }
      if (app === 'queue-gateway') {
        expect(events).toContainEqual(expect.objectContaining({ event: 'engine.call-failed', engine: 'queue-redis', tenant: 'acme' }));
      }
    }
  }, 120_000);
});
