import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { eventually } from '@restash/shared/util-testing';
import { Publisher, UrlGroupStore } from '@restash/queue/data-access-store';
import { parsePublish } from '@restash/queue/util-message';
import { type WorkerTestbed, startWorkerTestbed } from './testing/testbed';

const ENDPOINTS = 3;
const MESSAGES = 200;

/** A destination on 127.0.0.1 that counts the bodies each path receives and answers 200 after `answerAfterMs`. */
async function startCountingSink(answerAfterMs: number): Promise<{ url: string; bodies(path: string): string[]; close(): Promise<void> }> {
  const received = new Map<string, string[]>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = req.url ?? '/';
      received.set(path, [...(received.get(path) ?? []), Buffer.concat(chunks).toString()]);
      setTimeout(() => res.end('ok'), answerAfterMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    bodies: (path) => received.get(path) ?? [],
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * At least once through a SIGKILL of queue-worker during a URL-group fan-out (issue 17, reliability): 200
 * messages published to a group of 3 endpoints (600 deliveries); the worker is killed with SIGKILL a third of the
 * way through and a new one started. Every endpoint must receive every message at least once; duplicates (a
 * delivery whose attempt was under way at the kill) are counted and printed. The queue Redis writes every
 * command to its AOF (`appendfsync always`).
 */
describe('queue-worker killed during a URL-group fan-out', () => {
  let bed: WorkerTestbed;
  let sink: Awaited<ReturnType<typeof startCountingSink>>;
  // Short locks: the killed worker's deliveries are taken over within about 3 s.
  const startWorker = () => bed.startWorker({ LOCK_DURATION_MS: '2000', STALLED_INTERVAL_MS: '1000' });

  beforeAll(async () => {
    [bed, sink] = await Promise.all([startWorkerTestbed({ queueConfig: ['appendfsync always'], eventsPerProject: 100_000 }), startCountingSink(20)]);
  }, 120_000);

  afterAll(async () => {
    await bed?.stop();
    await sink?.close();
  });

  it('delivers every message to every endpoint at least once across the kill', async () => {
    const groups = new UrlGroupStore(bed.redis, 'restash:queue');
    const paths = Array.from({ length: ENDPOINTS }, (_, i) => `/endpoint-${i}`);
    await groups.addEndpoints(bed.project, 'fan', paths.map((path, i) => ({ name: `e${i}`, url: `${sink.url}${path}` })));
    const publisher = new Publisher(bed.store, groups);
    const now = Date.now();
    const parsed = Array.from({ length: MESSAGES }, (_, i) =>
      parsePublish({ destination: 'fan', headers: {}, body: Buffer.from(`m${i}`), nowMs: now, callerIp: '127.0.0.1', retries: { default: 3, max: 3 } }),
    );
    const results = await publisher.publish(bed.project, parsed);
    expect(results.flat()).toHaveLength(MESSAGES * ENDPOINTS);

    const first = await startWorker();
    const total = () => paths.reduce((n, path) => n + sink.bodies(path).length, 0);
    await eventually(() => expect(total()).toBeGreaterThanOrEqual((MESSAGES * ENDPOINTS) / 3), 60_000, 20);
    const atKill = total();
    await first.kill();
    await startWorker();

    await eventually(
      () => {
        for (const path of paths) expect(new Set(sink.bodies(path)).size).toBe(MESSAGES);
      },
      120_000,
      200,
    );
    const lost = paths.map((path) => MESSAGES - new Set(sink.bodies(path)).size);
    const duplicates = paths.map((path) => sink.bodies(path).length - new Set(sink.bodies(path)).size);
    console.log(`fan-out ${ENDPOINTS}x${MESSAGES}: killed after ${atKill} deliveries; lost per endpoint ${lost.join(',')}; duplicates per endpoint ${duplicates.join(',')}`);
    expect(lost).toEqual(paths.map(() => 0));
    for (const path of paths) expect(sink.bodies(path).every((body) => /^m\d+$/.test(body))).toBe(true);
  }, 240_000);
});
