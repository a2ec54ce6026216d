// Shared by the scripts of bench/stream: the topics and their broker-side names, the message value, the
// three direct Kafka clients behind one small interface, and a keep-alive HTTP client of the gateway.
//
// Direct clients (DIRECT): kafkajs 2.2.4 and @platformatic/kafka from the project's node_modules;
// @confluentinc/kafka-javascript (librdkafka) from ~/.cache/restash/confluent-kafka-javascript-<version>-node<version>, built by
// bench/stream/install-confluent.sh (it is not a project dependency: see that script). A client that
// cannot be loaded is skipped with the reason (directClient returns {skip}).
//
// env: KAFKA_BROKER (host:port), GATEWAY_URL, GATEWAY_USER, GATEWAY_PASSWORD, TOPIC_PREFIX (the
//      broker-side prefix of the tenant's cluster, restash.bench.events.)
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Pool } from 'undici';

const require = createRequire(import.meta.url);

/** Partitions of every topic of the benchmark, gateway and direct alike. */
export const PARTITIONS = 3;

/** The direct clients, in table order. */
export const DIRECT = ['kafkajs', 'platformatic', 'confluent'];

/** The version of @confluentinc/kafka-javascript that install-confluent.sh builds. */
export const CONFLUENT_VERSION = '1.10.1';
/** Where install-confluent.sh builds it: outside the clone, keyed by its version and Node's (one ABI). */
export const CONFLUENT_DIR = join(process.env.RESTASH_CACHE ?? join(homedir(), '.cache/restash'), `confluent-kafka-javascript-${CONFLUENT_VERSION}-node${process.versions.node}`);

/** Messages per produce request (REST) or send call (direct clients). */
export const BATCH = { produce1: 1, produce100: 100 };

/**
 * The tenant topic a tool writes or reads in a case: every writer has its own topic of the same shape, so
 * that all append to equally fresh logs; every reader reads the same pre-filled topic `consume`.
 */
export const topicOf = (tool, kase) => (kase === 'consume' ? 'consume' : tool === 'gateway' ? kase : `${tool}-${kase}`);

/** Every tenant topic of the benchmark (run.sh declares them, prepare.mjs checks them). */
export const ALL_TOPICS = ['consume', ...Object.keys(BATCH).flatMap((kase) => ['gateway', ...DIRECT].map((tool) => topicOf(tool, kase)))];

/** The broker-side name of a tenant topic or group. */
export const brokerName = (name) => `${process.env.TOPIC_PREFIX ?? 'restash.bench.events.'}${name}`;

/** A 100-byte ASCII message value, varying with `i` so that no two neighbours are alike. */
export function value(i) {
  const head = `bench-${i.toString(36)}-`;
  return head + 'x'.repeat(100 - head.length);
}

const brokers = () => [process.env.KAFKA_BROKER];

/** A kafkajs client (prepare.mjs uses its admin for the setup steps). */
export async function kafkajs() {
  const { Kafka, logLevel } = await import('kafkajs');
  return new Kafka({ clientId: 'restash-bench-direct', brokers: brokers(), logLevel: logLevel.NOTHING, connectionTimeout: 3000, requestTimeout: 30_000 });
}

/**
 * A direct client by name: {name, version, producer(), consume()} or {name, skip: reason}.
 *
 * producer() resolves {send(topic, values), close()}: send writes the string values with no key (the
 * client's own partitioning: round robin or sticky) and acks -1, resolving once the broker acknowledged.
 * consume(topic, groupId, total, onRecords) reads a topic from the beginning as a new consumer group,
 * calling onRecords(partition, offsets) as records come, and resolves once `total` have come.
 */
export async function directClient(name) {
  if (name === 'kafkajs') return kafkajsClient();
  if (name === 'platformatic') return platformaticClient();
  if (name === 'confluent') return confluentClient();
  throw new Error(`unknown client ${name}`);
}

/** The installed version of a package as `from` resolves it (its package.json, which `exports` may hide). */
function version(pkg, from = require) {
  const dir = from.resolve.paths(pkg)?.map((p) => join(p, pkg)).find((d) => existsSync(join(d, 'package.json')));
  return dir ? JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')).version : 'unknown';
}

async function kafkajsClient() {
  const { Partitioners } = await import('kafkajs');
  const kafka = await kafkajs();
  return {
    name: 'kafkajs',
    version: version('kafkajs'),
    async producer() {
      const p = kafka.producer({ allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner });
      await p.connect();
      return {
        async send(topic, values) {
          const result = await p.send({ topic, acks: -1, messages: values.map((value) => ({ value })) });
          if (result.length === 0) throw new Error('no acknowledgement');
        },
        close: () => p.disconnect(),
      };
    },
    async consume(topic, groupId, total, onRecords) {
      const consumer = kafka.consumer({ groupId, allowAutoTopicCreation: false });
      await consumer.connect();
      await consumer.subscribe({ topics: [topic], fromBeginning: true });
      await consumeBatches(consumer, total, onRecords);
    },
  };
}

async function platformaticClient() {
  const { Consumer, MessagesStreamFallbackModes, MessagesStreamModes, ProduceAcks, Producer, stringSerializers } = await import('@platformatic/kafka');
  const base = { clientId: 'restash-bench-direct', bootstrapBrokers: brokers() };
  return {
    name: 'platformatic',
    version: version('@platformatic/kafka'),
    async producer() {
      const p = new Producer({ ...base, serializers: stringSerializers });
      return {
        async send(topic, values) {
          // acks per send: @platformatic/kafka 2.12 ignores the constructor's acks (send defaults to 1, leader only).
          const result = await p.send({ acks: ProduceAcks.ALL, messages: values.map((value) => ({ topic, value })) });
          if (!result.offsets?.length) throw new Error('no acknowledgement');
        },
        close: () => p.close(),
      };
    },
    async consume(topic, groupId, total, onRecords) {
      // 1 MiB per partition and fetch, as kafkajs, the Java client and the gateway fetch (its own default is
      // the whole 50 MiB response: one fetch would then bring the topic, and the clock, which starts at the
      // first batch, would miss the transfer).
      const consumer = new Consumer({ ...base, groupId, maxBytesPerPartition: 1024 * 1024 });
      try {
        const stream = await consumer.consume({ topics: [topic], mode: MessagesStreamModes.COMMITTED, fallbackMode: MessagesStreamFallbackModes.EARLIEST });
        let received = 0;
        await new Promise((resolve, reject) => {
          // The stream hands over one message at a time: report them per partition, a fetch response's worth at once.
          let partition = -1;
          let offsets = [];
          const flush = () => {
            if (offsets.length > 0) onRecords(partition, offsets);
            offsets = [];
          };
          stream.on('data', (message) => {
            if (message.partition !== partition) flush();
            partition = message.partition;
            offsets.push(Number(message.offset));
            if (++received >= total) {
              flush();
              resolve();
            }
          });
          stream.on('fetch', flush);
          stream.on('error', reject);
        });
        await stream.close();
      } finally {
        await consumer.close(true);
      }
    },
  };
}

async function confluentClient() {
  const manifest = join(CONFLUENT_DIR, 'package.json');
  if (!existsSync(join(CONFLUENT_DIR, '.restash-install-complete'))) {
    return {
      name: 'confluent',
      skip: `@confluentinc/kafka-javascript ${CONFLUENT_VERSION} is not built (a native librdkafka build of minutes, kept out of npm install): run bash bench/stream/install-confluent.sh`,
    };
  }
  const from = createRequire(manifest);
  let KafkaJS;
  try {
    ({ KafkaJS } = from('@confluentinc/kafka-javascript'));
  } catch (error) {
    return { name: 'confluent', skip: `@confluentinc/kafka-javascript does not load (${error.message.split('\n')[0]}): rebuild it with rm -rf ${CONFLUENT_DIR} && bash bench/stream/install-confluent.sh` };
  }
  const kafka = new KafkaJS.Kafka({ kafkaJS: { clientId: 'restash-bench-direct', brokers: brokers(), logLevel: KafkaJS.logLevel.NOTHING } });
  return {
    name: 'confluent',
    version: version('@confluentinc/kafka-javascript', from),
    async producer() {
      const p = kafka.producer({ kafkaJS: { acks: -1, allowAutoTopicCreation: false } });
      await p.connect();
      return {
        async send(topic, values) {
          const result = await p.send({ topic, messages: values.map((value) => ({ value })) });
          if (result.length === 0) throw new Error('no acknowledgement');
        },
        close: () => p.disconnect(),
      };
    },
    async consume(topic, groupId, total, onRecords) {
      // Batches as librdkafka hands them over (its KafkaJS API cuts them at 32 messages by default).
      const consumer = kafka.consumer({ kafkaJS: { groupId, fromBeginning: true, allowAutoTopicCreation: false }, 'js.consumer.max.batch.size': -1 });
      await consumer.connect();
      await consumer.subscribe({ topics: [topic] });
      await consumeBatches(consumer, total, onRecords);
    },
  };
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

/**
 * Runs a connected, subscribed KafkaJS-style consumer (kafkajs, or confluent's KafkaJS API) until
 * `total` records have come, handing each batch's offsets to `onRecords`; disconnects it.
 */
async function consumeBatches(consumer, total, onRecords) {
  let received = 0;
  try {
    await new Promise((resolve, reject) => {
      consumer
        .run({
          partitionsConsumedConcurrently: PARTITIONS,
          eachBatch: async ({ batch }) => {
            if (batch.messages.length === 0) return;
            onRecords(batch.partition, batch.messages.map((m) => Number(m.offset)));
            if ((received += batch.messages.length) >= total) resolve();
          },
        })
        .catch(reject);
    });
  } finally {
    await consumer.disconnect();
  }
}
