// The workers of the direct cases of bench/queue (bench.ts): plain BullMQ Workers on DIRECT_QUEUE and on
// the `parallel` case's queue (limitedQueue(PARALLELISM), whose global concurrency this sets to
// PARALLELISM, as queue-worker's lanes have theirs) of the queue Redis, in one process on core 0 where
// queue-worker runs, started once like queue-worker. Their processor does nothing but note when it ran
// (CLOCK_MONOTONIC, see common.mjs) and the job's run tag and number; no HTTP, no other Redis call than
// BullMQ's own. A third Worker, on HTTP_QUEUE (the `floor` runs), notes nothing: it delivers each job by
// HTTP, an undici POST of the job's body to the sink (SINK_PORT, in the load generator's process, which
// notes the arrival), with the header the sink counts arrivals by, as queue-worker does, but without
// signing, tenancy, events or callbacks: what any BullMQ worker that delivers over HTTP pays at least.
//
// A fourth consumer, of the `streams` runs, is restash's own engine of the shared deliveries used directly
// (DeliveryConsumer over DeliveryStreams, libs/queue/data-access-store, under STREAMS_PREFIX): its processor notes the
// message's run and number, as the direct BullMQ worker's does.
//
// Management server on 127.0.0.1:MANAGEMENT_PORT, for bench.ts and load.mjs:
//   GET  /readyz   200 once the worker runs
//   GET  /count    how many jobs were processed since the last /take
//   POST /take     the processed jobs since the last /take, [[run, n, ms], ...], and forgets them
//
// env: QUEUE_REDIS_URL, QUEUE_PREFIX, DIRECT_QUEUE, WORKER_CONCURRENCY (100, as queue-worker's, each
//      Worker), PARALLELISM (10), MANAGEMENT_PORT, SINK_PORT
import { createServer } from 'node:http';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { Agent } from 'undici';
import { DIRECT_QUEUE, HTTP_QUEUE, MESSAGE_ID_HEADER, QUEUE_PREFIX, RETENTION_MS, STREAMS_PREFIX, clock, limitedQueue, streamsEngine } from './common.mjs';

let done = [];
const sink = `http://127.0.0.1:${process.env.SINK_PORT}`;
const http = new Agent({ keepAliveTimeout: 60_000 });

/** The floor's processor: POST the body to the sink; a refusal fails the job (the run then reports it missing). */
const deliver = async (job) => {
  const headers = { 'content-type': 'text/plain', [MESSAGE_ID_HEADER]: `${job.data.r}-${job.data.n}` };
  const res = await http.request({ origin: sink, path: '/sink', method: 'POST', headers, body: job.data.body });
  await res.body.dump();
  if (res.statusCode !== 200) throw new Error(`the sink answered ${res.statusCode}`);
};

/** The direct cases' processor: notes when the job ran. */
const note = async (job) => {
  done.push([job.data.r, job.data.n, clock()]);
};

// As queue-worker: the connection of a worker must retry forever (BullMQ requires it), lock and stalled
// checks at BullMQ's defaults (queue-worker's defaults are the same 30 s).
// Each Worker has its own connection, as queue-worker's deliveries Worker and its lanes have theirs.
const start = (name, processor = note) => {
  const worker = new Worker(
    name,
    processor,
    {
      connection: new Redis(process.env.QUEUE_REDIS_URL, { maxRetriesPerRequest: null }),
      prefix: QUEUE_PREFIX,
      concurrency: Number(process.env.WORKER_CONCURRENCY ?? 100),
    },
  );
  worker.on('error', (error) => process.stderr.write(`worker ${name}: ${String(error)}\n`));
  worker.on('failed', (job, error) => process.stderr.write(`job ${job?.id ?? '?'} failed: ${String(error)}\n`));
  return worker;
};
const parallelism = Number(process.env.PARALLELISM ?? 10);
const setup = new Redis(process.env.QUEUE_REDIS_URL);
const limited = new Queue(limitedQueue(parallelism), { connection: setup, prefix: QUEUE_PREFIX });
await limited.setGlobalConcurrency(parallelism);
await limited.close();
setup.disconnect();
const workers = [start(DIRECT_QUEUE), start(limitedQueue(parallelism)), start(HTTP_QUEUE, deliver)];
await Promise.all(workers.map((w) => w.waitUntilReady()));
// queue-worker's settings of the consumer: BullMQ's lock and stall defaults, as the Workers above have.
const { DeliveryStreams, DeliveryConsumer } = streamsEngine();
const streamsConnection = new Redis(process.env.QUEUE_REDIS_URL, { maxRetriesPerRequest: 2 });
const streamsReader = new Redis(process.env.QUEUE_REDIS_URL, { maxRetriesPerRequest: null });
const streams = new DeliveryStreams(streamsConnection, { prefix: STREAMS_PREFIX, messageRetentionMs: RETENTION_MS });
const consumer = new DeliveryConsumer(streams, streamsReader, 'direct', async (job) => void note({ data: job.data }), {
  concurrency: Number(process.env.WORKER_CONCURRENCY ?? 100),
  lockDurationMs: 30_000,
  stalledIntervalMs: 30_000,
  maxStalledCount: 1,
  backoff: () => 0,
  onError: (error) => process.stderr.write(`streams consumer: ${String(error)}\n`),
});
await consumer.run();

const server = createServer((req, res) => {
  const send = (status, body, type = 'text/plain') => {
    res.writeHead(status, { 'content-type': type });
    res.end(body);
  };
  if (req.url === '/readyz') return workers.every((w) => w.isRunning()) && consumer.isRunning() ? send(200, 'ok') : send(503, 'not running');
  if (req.url === '/count') return send(200, String(done.length));
  if (req.url === '/take' && req.method === 'POST') {
    const taken = done;
    done = [];
    return send(200, JSON.stringify(taken), 'application/json');
  }
  send(404, 'not found');
});
server.listen(Number(process.env.MANAGEMENT_PORT), '127.0.0.1');

const stop = async () => {
  server.close();
  await Promise.all([...workers.map((w) => w.close()), consumer.close()]);
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
