// Shared by the scripts of bench/queue: the clock, the message body, the raw BullMQ queues of the direct
// cases, a keep-alive HTTP client of the gateway, and the Redis command counter read around every run.
//
// env: QUEUE_REDIS_URL, QUEUE_PREFIX (restash:queue, the gateway's and worker's), DIRECT_QUEUE
//      (bench-direct; the `parallel` case's queue is its name with -p<parallelism>, the floor's with -http), MESSAGE_RETENTION_MS (86400000, as queue-gateway's default), GATEWAY_URL,
//      QUEUE_TOKEN (and QUEUE_TOKEN_Q2, the token of the project on the second queue server)
import { createRequire } from 'node:module';
import { Pool } from 'undici';

/** The BullMQ queue of the direct case: a queue of its own on the same Redis, under the same prefix. */
export const DIRECT_QUEUE = process.env.DIRECT_QUEUE ?? 'bench-direct';

/**
 * The BullMQ queue of the `floor` runs (`<DIRECT_QUEUE>-http`), whose worker in direct-worker.mjs delivers
 * each job by HTTP to the sink and does nothing else.
 */
export const HTTP_QUEUE = `${DIRECT_QUEUE}-http`;

/**
 * The key prefix of the `streams` runs' engine: restash's shared deliveries (DeliveryStreams, DeliveryConsumer of
 * libs/queue/data-access-store) on keys of their own, which direct-worker.mjs consumes and load.mjs adds to.
 */
export const STREAMS_PREFIX = `${process.env.QUEUE_PREFIX ?? 'restash:queue'}:bench-streams`;

/** How long the engines keep a settled message, in ms: as long as the gateway keeps delivered messages. */
export const RETENTION_MS = Number(process.env.MESSAGE_RETENTION_MS ?? 86_400_000);

/**
 * The streams engine's classes, loaded from their TypeScript sources (the process runs with
 * `NODE_OPTIONS=-r @swc-node/register`, as bench.ts sets for the `streams` runs and direct-worker.mjs).
 */
export function streamsEngine() {
  const require = createRequire(import.meta.url);
  const { DeliveryStreams } = require('../../libs/queue/data-access-store/src/delivery-streams.ts');
  const { DeliveryConsumer } = require('../../libs/queue/data-access-store/src/delivery-consumer.ts');
  return { DeliveryStreams, DeliveryConsumer };
}

/** The header that names a delivered message to the sink: queue-worker's, and the floor worker's `<run>-<n>`. */
export const MESSAGE_ID_HEADER = 'upstash-message-id';
export const QUEUE_PREFIX = process.env.QUEUE_PREFIX ?? 'restash:queue';

/**
 * The BullMQ queue of the direct case `parallel`: `<DIRECT_QUEUE>-p<parallelism>`, whose global
 * concurrency direct-worker.mjs sets to `parallelism` (as queue-worker runs a queue or flow-control key).
 */
export const limitedQueue = (parallelism) => `${DIRECT_QUEUE}-p${parallelism}`;

/**
 * Job options of the direct case: auto ids, one attempt (the gateway's messages are published with
 * Upstash-Retries: 0), and completed jobs kept as long as the gateway keeps delivered messages
 * (MESSAGE_RETENTION_MS), so both sides leave the same kind of trail in Redis.
 */
export function directJobOptions() {
  const age = Math.ceil(RETENTION_MS / 1000);
  return { attempts: 1, removeOnComplete: { age }, removeOnFail: { age } };
}

/**
 * Milliseconds on CLOCK_MONOTONIC (process.hrtime), which every process of the machine shares: the
 * direct worker's completion times and the load generator's add times are on the same clock.
 */
export const clock = () => Number(process.hrtime.bigint()) / 1e6;

/** A 100-byte ASCII message body, varying with `i` so that no two neighbours are alike. */
export function value(i) {
  const head = `bench-${i.toString(36)}-`;
  return head + 'x'.repeat(100 - head.length);
}

/** A keep-alive undici pool of the gateway, `connections` sockets, Bearer auth (QUEUE_TOKEN unless `token` is given per call). */
export function gateway(connections) {
  const pool = new Pool(process.env.GATEWAY_URL, { connections, pipelining: 1, keepAliveTimeout: 60_000 });
  /** POST path with a body and headers; resolves the parsed answer, rejects on any status but `expect`. */
  const post = async (path, body, headers = {}, expect = 201, token = process.env.QUEUE_TOKEN) => {
    const res = await pool.request({ method: 'POST', path, body, headers: { authorization: `Bearer ${token}`, ...headers } });
    const text = await res.body.text();
    if (res.statusCode !== expect) throw new Error(`HTTP ${res.statusCode}: ${text.slice(0, 160)}`);
    return JSON.parse(text);
  };
  return { post, close: () => pool.close() };
}

/** Commands a Redis has processed so far (INFO total_commands_processed). */
export async function redisCommands(redis) {
  const info = await redis.info('stats');
  return Number(/^total_commands_processed:(\S+)/m.exec(info)?.[1] ?? NaN);
}

export const percentile = (sorted, q) => (sorted.length ? sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)] : NaN);
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
