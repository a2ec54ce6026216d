// One timed run for bench/queue (bench.ts): prints one JSON record on stdout, a readable line on stderr.
//
//   node bench/queue/load.mjs gateway single|batch|queued|flow|servers MESSAGES
//   node bench/queue/load.mjs before  single|batch|queued|flow MESSAGES
//   node bench/queue/load.mjs direct  single|batch|parallel MESSAGES
//   node bench/queue/load.mjs floor   single|batch MESSAGES
//   node bench/queue/load.mjs streams single|batch MESSAGES
//
// Every case publishes MESSAGES messages of 100 bytes in a closed loop, CONCURRENCY publishes (requests,
// adds) in flight (each sends the next as soon as its answer is read), and waits until every one has come
// out of the other end. The bodies are built before the clock starts.
//   gateway single   POST /v2/publish/http://127.0.0.1:SINK_PORT/sink with the body, Bearer token and
//                    Upstash-Retries: 0 (undici, CONCURRENCY keep-alive connections); a publish counts when
//                    it answered 201 with a messageId.
//   gateway batch    POST /v2/batch, BATCH messages per request (a JSON array of {destination, headers:
//                    {Upstash-Retries: 0}, body}), CONCURRENCY requests in flight; each 200 answer's messageIds.
//   gateway queued   POST /v2/enqueue/QUEUE_NAME/http://…/sink (a queue of parallelism PARALLELISM, made by
//                    bench.ts), as single.
//   gateway flow     as single, with Upstash-Flow-Control-Key: bench and Upstash-Flow-Control-Value:
//                    parallelism=PARALLELISM.
//   gateway servers  as single, every other message published by the project on the second queue Redis server
//                    (QUEUE_TOKEN_Q2; bench.ts starts it, `q2`, with a queue-worker of its own): the aggregate rate of
//                    two queue servers; the Redis commands counted are both servers'.
//   before           as gateway, against the `before` build's queue-gateway (BEFORE_URL, set by bench.ts with
//                    BENCH_BASELINE) and its queue-worker.
//   queue-worker delivers each message by HTTP POST to the sink, a node:http server in this process (so on
//   the load core) that answers 200 at once and notes when each Upstash-Message-Id arrived (a second
//   arrival of an id is an error).
//   direct single    raw BullMQ, no HTTP: Queue.add of {r, n, body} on DIRECT_QUEUE of the same Redis (one
//                    ioredis connection, as the gateway has one), the same number of adds in flight.
//   direct batch     Queue.addBulk of BATCH such jobs per call, CONCURRENCY calls in flight.
//   direct parallel  Queue.add on DIRECT_QUEUE-p<PARALLELISM>, a queue whose global concurrency is
//                    PARALLELISM (direct-worker.mjs sets it): the closest BullMQ equivalent of a queue or a
//                    flow-control key of that parallelism (queue-worker runs each as a BullMQ queue with a
//                    global concurrency), compared with both.
//   The processors of direct-worker.mjs (its own process on core 0, started by bench.ts) note when they
//   ran, and this process fetches those notes from its management server at the end.
//   floor single     raw BullMQ with the HTTP delivery: Queue.add as direct single, on HTTP_QUEUE, whose
//                    worker in direct-worker.mjs POSTs each job's body to the sink (undici, keep-alive) and
//                    does nothing else; arrivals are noted by the sink, as for the gateway.
//   floor batch      Queue.addBulk as direct batch, on HTTP_QUEUE.
//   streams single   restash's engine of the shared deliveries used directly, no HTTP: DeliveryStreams.add of a
//                    message {r, n, body} under STREAMS_PREFIX (one ioredis connection, the same adds in flight),
//                    taken by the DeliveryConsumer of direct-worker.mjs, whose processor notes it as direct's does.
//   streams batch    BATCH such adds sent together per call (as queue-gateway publishes a batch), CONCURRENCY calls.
// Per message, latency is from the start of its publish (add, batch) to its arrival at the sink (the run
// of the processor), on CLOCK_MONOTONIC shared by both processes; p50/p99 over the messages. Throughput
// is the messages that arrived / (last arrival - first publish start). The publish-only rate is the
// accepted messages / (last answer - first start). A run gives up when nothing arrived for
// BENCH_STALL_SECONDS (30); what is missing is reported as an error.
// The harness (bench/lib/harness.ts) measures the CPU per message of queue-gateway, queue-worker,
// direct-worker.mjs and the queue Redis around this process (`requests` is the messages delivered);
// this process adds its own (process.cpuUsage, publisher and sink together) and the queue Redis's
// commands per message (INFO total_commands_processed before the first publish and 250 ms after the
// last arrival).
// env: see common.mjs; CONCURRENCY, BATCH (100), PARALLELISM (10), QUEUE_NAME (bench), SINK_PORT,
//      DIRECT_MANAGEMENT_URL, BENCH_STALL_SECONDS
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { DIRECT_QUEUE, HTTP_QUEUE, MESSAGE_ID_HEADER, QUEUE_PREFIX, RETENTION_MS, STREAMS_PREFIX, clock, limitedQueue, directJobOptions, gateway, percentile, redisCommands, sleep, streamsEngine, value } from './common.mjs';

const [tool, kase, arg] = process.argv.slice(2);
const CASES = { gateway: ['single', 'batch', 'queued', 'flow', 'servers'], before: ['single', 'batch', 'queued', 'flow'], direct: ['single', 'batch', 'parallel'], floor: ['single', 'batch'], streams: ['single', 'batch'] };
if (!CASES[tool]?.includes(kase) || !(Number(arg) > 0)) {
  process.stderr.write(`usage: load.mjs gateway|before ${CASES.gateway.join('|')} MESSAGES, direct ${CASES.direct.join('|')} MESSAGES, floor ${CASES.floor.join('|')} MESSAGES, or streams ${CASES.streams.join('|')} MESSAGES\n`);
  process.exit(2);
}
if (tool === 'before') process.env.GATEWAY_URL = process.env.BEFORE_URL; // read by common.mjs's gateway()
const total = Number(arg);
const batch = kase === 'batch' ? Number(process.env.BATCH ?? 100) : 1; // messages per request (add call)
const parallelism = Number(process.env.PARALLELISM ?? 10);
const concurrency = Number(process.env.CONCURRENCY ?? 64);
const stallMs = Number(process.env.BENCH_STALL_SECONDS ?? 30) * 1000;

const errors = {}; // message -> count
const fail = (message, count = 1) => (errors[message] = (errors[message] ?? 0) + count);

const bodies = Array.from({ length: total }, (_, i) => value(i));
const starts = new Float64Array(total).fill(NaN); // publish (add) start, ms
const answered = new Float64Array(total).fill(NaN); // publish (add) answer, ms
const arrived = new Float64Array(total).fill(NaN); // arrival at the sink (processor run), ms

/**
 * Publishes every message, `batch` per call of `send(from, to)` (messages from..to-1), CONCURRENCY calls
 * in flight; resolves with how many were accepted. `send` rejects on a refusal (its messages count as not
 * accepted).
 */
async function publishAll(send) {
  let next = 0;
  let accepted = 0;
  const loop = async () => {
    while (next < total) {
      const from = next;
      const to = Math.min(total, from + batch);
      next = to;
      const at = clock();
      starts.fill(at, from, to);
      try {
        await send(from, to);
        answered.fill(clock(), from, to);
        accepted += to - from;
      } catch (error) {
        fail(String(error.message ?? error).slice(0, 120));
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, loop));
  return accepted;
}

/** Waits until `count()` reaches `target`, giving up when it has not moved for stallMs. */
async function waitFor(count, target, every) {
  let last = -1;
  let movedAt = clock();
  for (;;) {
    const n = await count();
    if (n >= target) return;
    if (n !== last) [last, movedAt] = [n, clock()];
    else if (clock() - movedAt > stallMs) return;
    await sleep(every);
  }
}

/**
 * The sink on SINK_PORT: answers 200 to every delivery once its body is read, and notes when each message
 * id (MESSAGE_ID_HEADER) arrived.
 * @returns `waitForAll(ids, accepted)`, which waits until the `accepted` messages `ids` names arrived (or
 *   the run stalls) and fills `arrived` from their arrivals, and `close`
 */
async function listenSink() {
  const sink = new Map(); // message id -> arrival, ms
  const server = createServer((req, res) => {
    const at = clock();
    const id = req.headers[MESSAGE_ID_HEADER];
    if (typeof id !== 'string') fail('a delivery without Upstash-Message-Id');
    else if (sink.has(id)) fail('a message delivered twice');
    else sink.set(id, at);
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end('ok');
    });
  });
  server.keepAliveTimeout = 120_000;
  await new Promise((resolve) => server.listen(Number(process.env.SINK_PORT), '127.0.0.1', resolve));
  const waitForAll = async (ids, accepted) => {
    // Messages that came early from an earlier, failed run would not be ours: count only our ids.
    const ours = () => ids.reduce((n, id) => n + (id !== undefined && sink.has(id) ? 1 : 0), 0);
    await waitFor(() => (sink.size >= accepted ? ours() : sink.size), accepted, 20);
    for (let i = 0; i < total; i++) if (ids[i] !== undefined) arrived[i] = sink.get(ids[i]) ?? NaN;
  };
  const close = () => {
    server.closeAllConnections();
    server.close();
  };
  return { waitForAll, close };
}

/**
 * Waits until the sink has every accepted message of `ids` (message i -> its id); the run's close closes the
 * publisher (the gateway's HTTP client, the floor's queue), then the sink.
 */
async function untilDelivered(sink, ids, accepted, publisher) {
  await sink.waitForAll(ids, accepted);
  return {
    accepted,
    close: async () => {
      await publisher.close();
      sink.close();
    },
  };
}

async function runGateway() {
  const ids = new Array(total); // message i -> messageId
  const sink = await listenSink();
  const http = gateway(concurrency);
  const destination = `http://127.0.0.1:${process.env.SINK_PORT}/sink`;
  const unexpected = (answer) => new Error(`unexpected answer ${JSON.stringify(answer).slice(0, 120)}`);
  let accepted;
  if (kase === 'batch') {
    const headers = { 'content-type': 'application/json' };
    accepted = await publishAll(async (from, to) => {
      const items = [];
      for (let i = from; i < to; i++) items.push({ destination, headers: { 'Upstash-Retries': '0' }, body: bodies[i] });
      const answer = await http.post('/v2/batch', JSON.stringify(items), headers, 200);
      if (!Array.isArray(answer) || answer.length !== to - from || answer.some((a) => typeof a?.messageId !== 'string')) throw unexpected(answer);
      for (let i = from; i < to; i++) ids[i] = answer[i - from].messageId;
    });
  } else {
    const path = kase === 'queued' ? `/v2/enqueue/${process.env.QUEUE_NAME ?? 'bench'}/${destination}` : `/v2/publish/${destination}`;
    const headers = { 'content-type': 'text/plain', 'upstash-retries': '0' };
    if (kase === 'flow') Object.assign(headers, { 'upstash-flow-control-key': 'bench', 'upstash-flow-control-value': `parallelism=${parallelism}` });
    const second = process.env.QUEUE_TOKEN_Q2;
    accepted = await publishAll(async (i) => {
      const answer = await http.post(path, bodies[i], headers, 201, kase === 'servers' && i % 2 === 1 ? second : process.env.QUEUE_TOKEN);
      if (typeof answer.messageId !== 'string') throw unexpected(answer);
      ids[i] = answer.messageId;
    });
  }
  return untilDelivered(sink, ids, accepted, http);
}

/**
 * A BullMQ queue of the queue Redis for the direct and floor runs, and `addAll(run)`, which adds every
 * message as a job {r: run, n, body} (addBulk of `batch` for the batch case); resolves how many were added.
 */
async function directQueue(name) {
  const connection = new Redis(process.env.QUEUE_REDIS_URL, { maxRetriesPerRequest: 2 });
  const queue = new Queue(name, { connection, prefix: QUEUE_PREFIX });
  await queue.waitUntilReady();
  const options = directJobOptions();
  const addAll = (run) =>
    kase === 'batch'
      ? publishAll(async (from, to) => {
          const jobs = [];
          for (let n = from; n < to; n++) jobs.push({ name: 'bench', data: { r: run, n, body: bodies[n] }, opts: options });
          await queue.addBulk(jobs);
        })
      : publishAll(async (i) => {
          await queue.add('bench', { r: run, n: i, body: bodies[i] }, options);
        });
  const close = async () => {
    await queue.close();
    connection.disconnect();
  };
  return { addAll, close };
}

async function runFloor() {
  const sink = await listenSink();
  const queue = await directQueue(HTTP_QUEUE);
  const run = randomBytes(6).toString('hex');
  const ids = Array.from({ length: total }, (_, n) => `${run}-${n}`);
  const accepted = await queue.addAll(run);
  return untilDelivered(sink, ids, accepted, queue);
}

/**
 * restash's engine of the shared deliveries under STREAMS_PREFIX, and `addAll(run)`, which adds every message as
 * {r: run, n, body} (for the batch case, `batch` adds sent together per call); resolves how many were added.
 */
async function streamsQueue() {
  const { DeliveryStreams } = streamsEngine();
  const connection = new Redis(process.env.QUEUE_REDIS_URL, { maxRetriesPerRequest: 2 });
  const streams = new DeliveryStreams(connection, { prefix: STREAMS_PREFIX, messageRetentionMs: RETENTION_MS });
  const now = Date.now();
  const message = (run, n) => ({ messageId: `msg_${run}-${n}`, project: 'bench.direct', url: 'http://127.0.0.1/sink', method: 'POST', header: {}, body: bodies[n], maxRetries: 0, notBefore: now, createdAt: now, callerIp: '127.0.0.1', r: run, n });
  const addAll = (run) =>
    publishAll(async (from, to) => {
      const adds = [];
      for (let n = from; n < to; n++) adds.push(streams.add(message(run, n)));
      await Promise.all(adds);
    });
  return { addAll, close: async () => connection.disconnect() };
}

async function runDirect() {
  const manage = process.env.DIRECT_MANAGEMENT_URL;
  const queue = tool === 'streams' ? await streamsQueue() : await directQueue(kase === 'parallel' ? limitedQueue(parallelism) : DIRECT_QUEUE);
  await fetch(`${manage}/take`, { method: 'POST' }).then((res) => res.text()); // forget anything older
  const run = randomBytes(6).toString('hex');
  const accepted = await queue.addAll(run);
  // The worker's count is polled (cheap), its notes taken once they can all be there.
  let seen = 0;
  const take = async () => {
    for (const [r, n, at] of await (await fetch(`${manage}/take`, { method: 'POST' })).json()) {
      if (r !== run) continue;
      if (!Number.isNaN(arrived[n])) fail('a job processed twice');
      else seen++;
      arrived[n] = at;
    }
    return seen;
  };
  await waitFor(async () => {
    const pending = Number(await (await fetch(`${manage}/count`)).text());
    return seen + pending >= accepted ? take() : seen + pending;
  }, accepted, 50);
  await take();
  return { accepted, close: queue.close };
}

// The servers counted: the queue Redis, and the second one for the `servers` case.
const servers = [process.env.QUEUE_REDIS_URL, ...(kase === 'servers' ? [process.env.QUEUE_REDIS_URL_Q2] : [])].map((url) => new Redis(url));
const commandsOf = async () => (await Promise.all(servers.map(redisCommands))).reduce((a, b) => a + b, 0);
const commandsBefore = await commandsOf();
const clientBefore = process.cpuUsage();
const { accepted, close } = await { gateway: runGateway, before: runGateway, direct: runDirect, floor: runFloor, streams: runDirect }[tool]();
await sleep(250); // the worker's bookkeeping after the last arrival (the completed job, the event)
const client = process.cpuUsage(clientBefore);
const commands = (await commandsOf()) - commandsBefore;
await close();
for (const server of servers) server.disconnect();

const least = (values) => values.reduce((m, t) => (t < m ? t : m), Infinity); // NaN never wins
const most = (values) => values.reduce((m, t) => (t > m ? t : m), -Infinity);
const first = least(starts);
const delivered = arrived.filter((t) => !Number.isNaN(t));
const lastArrival = most(delivered);
const lastAnswer = most(answered);
if (delivered.length < accepted) fail(`${accepted - delivered.length} of ${accepted} accepted messages never arrived`);
const latencies = Float64Array.from(delivered.length ? arrived.map((t, i) => t - starts[i]).filter((t) => !Number.isNaN(t)) : []).sort();
const publishLatencies = Float64Array.from(answered.map((t, i) => t - starts[i]).filter((t) => !Number.isNaN(t))).sort();
const seconds = (lastArrival - first) / 1000;
const perMessage = (cpu) => (cpu / delivered.length) * 1e6;
const record = {
  kind: 'queue',
  tool,
  case: kase,
  batch,
  messages: total,
  accepted,
  delivered: delivered.length,
  concurrency,
  seconds,
  messagesPerSecond: delivered.length / seconds,
  publishSeconds: (lastAnswer - first) / 1000,
  publishPerSecond: accepted / ((lastAnswer - first) / 1000),
  p50: percentile(latencies, 0.5),
  p99: percentile(latencies, 0.99),
  publishP50: percentile(publishLatencies, 0.5),
  publishP99: percentile(publishLatencies, 0.99),
  clientCpuUsPerMessage: perMessage((client.user + client.system) / 1e6),
  redisCommandsPerMessage: commands / delivered.length,
  requests: delivered.length,
  errors,
};
const failures = Object.entries(errors).map(([message, count]) => `${count}x ${message}`).join('; ');
const cpu = `  load CPU ${record.clientCpuUsPerMessage.toFixed(0)} µs/msg, redis ${record.redisCommandsPerMessage.toFixed(1)} cmd/msg`;
process.stderr.write(
  `${`${tool} ${kase}`.padEnd(16)} ${Math.round(record.messagesPerSecond).toString().padStart(6)} msg/s  p50 ${record.p50.toFixed(1)} ms  p99 ${record.p99.toFixed(1)} ms` +
    `  (publish only ${Math.round(record.publishPerSecond)}/s)${cpu}${failures ? `  ERRORS: ${failures}` : ''}\n`,
);
process.stdout.write(`${JSON.stringify(record)}\n`);
process.exit(0);
