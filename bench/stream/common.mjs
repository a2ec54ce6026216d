// Shared by the scripts of bench/stream: the topics and their broker-side names, the message value,
// kafkajs clients, and a keep-alive HTTP client of the gateway.
//
// env: KAFKA_BROKER (host:port), GATEWAY_URL, GATEWAY_USER, GATEWAY_PASSWORD, TOPIC_PREFIX (the
//      broker-side prefix of the tenant's cluster, restash.bench.events.)
import { Kafka, Partitioners, logLevel } from 'kafkajs';
import { Pool } from 'undici';

/** Partitions of every topic of the benchmark, gateway and direct alike. */
export const PARTITIONS = 3;

/** The tenant topic each case and client writes or reads (direct ones are addressed by their broker-side name). */
export const TOPICS = {
  produce1: { gateway: 'produce1', direct: 'direct-produce1' },
  produce100: { gateway: 'produce100', direct: 'direct-produce100' },
  // Both read the same pre-filled topic, each round with a fresh group.
  consume: { gateway: 'consume', direct: 'consume' },
};

/** Messages per produce request (REST) or producer.send call (kafkajs). */
export const BATCH = { produce1: 1, produce100: 100 };

/** The broker-side name of a tenant topic or group. */
export const brokerName = (name) => `${process.env.TOPIC_PREFIX ?? 'restash.bench.events.'}${name}`;

/** A 100-byte ASCII message value, varying with `i` so that no two neighbours are alike. */
export function value(i) {
  const head = `bench-${i.toString(36)}-`;
  return head + 'x'.repeat(100 - head.length);
}

export function kafka() {
  return new Kafka({
    clientId: 'restash-bench-direct',
    brokers: [process.env.KAFKA_BROKER],
    logLevel: logLevel.NOTHING,
    connectionTimeout: 3000,
    requestTimeout: 30_000,
  });
}

/** A connected kafkajs producer, as the gateway makes one (default partitioner, no auto topic creation). */
export async function producer() {
  const p = kafka().producer({ allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner });
  await p.connect();
  return p;
}

/** A keep-alive undici pool of the gateway, `connections` sockets, Basic auth. */
export function gateway(connections) {
  const pool = new Pool(process.env.GATEWAY_URL, { connections, pipelining: 1, keepAliveTimeout: 60_000 });
  const authorization = `Basic ${Buffer.from(`${process.env.GATEWAY_USER}:${process.env.GATEWAY_PASSWORD}`).toString('base64')}`;
  /** POST path with a JSON body (string or Buffer); resolves the parsed answer, rejects on a non-200. */
  const post = async (path, body, headers = {}) => {
    const res = await pool.request({ method: 'POST', path, body, headers: { authorization, 'content-type': 'application/json', ...headers } });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode}: ${text.slice(0, 160)}`);
    return JSON.parse(text);
  };
  const get = async (path) => {
    const res = await pool.request({ method: 'GET', path, headers: { authorization } });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode}: ${text.slice(0, 160)}`);
    return JSON.parse(text);
  };
  return { post, get, close: () => pool.close() };
}

export const percentile = (sorted, q) => (sorted.length ? sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)] : NaN);
