// One timed run for bench/stream/run.sh: prints one JSON record on stdout, a readable line on stderr.
//
//   node bench/stream/load.mjs TOOL produce1|produce100 SECONDS
//   node bench/stream/load.mjs TOOL consume MESSAGES GROUP
//
// Run by bench/stream/bench.ts (bench/lib/harness.ts), which measures the CPU time of the gateway and of
// the broker around each run.
//
// TOOL is gateway or a direct client (common.mjs DIRECT: kafkajs, platformatic, confluent). A direct
// client that cannot be loaded gives a record {skipped: reason} and the reason on stderr.
//
// produce1, produce100  closed loop, CONCURRENCY requests in flight, each sending the next as soon as
//     its answer is read; 1 or 100 messages of 100 bytes per request, no key. The bodies are built
//     before the clock starts.
//     gateway  POST /produce, body {topic, value} or an array of 100; undici, CONCURRENCY keep-alive
//              connections. A request counts when it answered 200 with one offset per message.
//     direct   the client's send of 1 or 100 messages with acks -1 on one producer (as the gateway
//              has one), the same number of calls in flight.
//     Latency is per request (per send call).
// consume  reads MESSAGES messages (the whole pre-filled topic) as a new consumer group, GROUP and a
//          unique suffix.
//     gateway  one consumer instance, one request at a time: POST /consume/GROUP/bench
//              {topic, timeout: 1000} with Kafka-Auto-Offset-Reset: earliest, until MESSAGES have
//              come; then /delete-consumer. Latency is per request.
//     direct   the client's group consumer from the earliest offset (kafkajs and confluent: eachBatch,
//              partitionsConsumedConcurrently 3; platformatic: its messages stream) until MESSAGES have
//              come; no per-request latency.
//     The clock runs from the first message to the last, so neither side's group join (reported as
//     joinMs) counts; messages/s leaves the first batch out. Offsets are checked to increase in
//     every partition (a repeat is an error).
// CPU per message of the client itself: process.cpuUsage over the whole run, connecting included.
// env: see common.mjs; CONCURRENCY (in flight, produce cases)
import { closedLoop } from '../lib/load.mjs';
import { BATCH, brokerName, directClient, gateway, percentile, topicOf, value } from './common.mjs';

const [tool, kase, arg, groupPrefix] = process.argv.slice(2);
const group = `${groupPrefix}-${Date.now().toString(36)}`;
const concurrency = Number(process.env.CONCURRENCY ?? 1);
const client = tool === 'gateway' ? undefined : await directClient(tool);
if (client?.skip) {
  process.stderr.write(`${kase.padEnd(10)} ${tool.padEnd(12)} skipped: ${client.skip}\n`);
  process.stdout.write(`${JSON.stringify({ kind: kase, tool, skipped: client.skip })}\n`);
  process.exit(0);
}

const latencies = []; // ms per request
const errors = {}; // message -> count
const fail = (message) => (errors[message] = (errors[message] ?? 0) + 1);

async function produce(seconds) {
  const batch = BATCH[kase];
  const topic = topicOf(tool, kase);
  const RING = 256;
  let send, close;
  if (tool === 'gateway') {
    const http = gateway(concurrency);
    const bodies = Array.from({ length: RING }, (_, r) => {
      const messages = Array.from({ length: batch }, (_, i) => ({ topic, value: value(r * batch + i) }));
      return JSON.stringify(batch === 1 ? messages[0] : messages);
    });
    send = async (n) => {
      const answer = await http.post('/produce', bodies[n % RING]);
      const list = Array.isArray(answer) ? answer : [answer];
      if (list.length !== batch || list.some((m) => typeof m.offset !== 'number' || m.offset < 0)) throw new Error(`unexpected answer ${JSON.stringify(answer).slice(0, 120)}`);
    };
    close = () => http.close();
  } else {
    const p = await client.producer();
    const kafkaTopic = brokerName(topic);
    const lists = Array.from({ length: RING }, (_, r) => Array.from({ length: batch }, (_, i) => value(r * batch + i)));
    send = (n) => p.send(kafkaTopic, lists[n % RING]);
    close = () => p.close();
  }
  const elapsed = await closedLoop({ seconds, concurrency, send, latencies, fail: (error) => fail(String(error.message ?? error).slice(0, 120)) });
  await close();
  return { requests: latencies.length, messages: latencies.length * batch, seconds: elapsed, batch, concurrency };
}

async function consume(total) {
  const last = new Map(); // partition -> last offset seen
  let received = 0;
  let first; // {at, count}: the first non-empty batch
  let batches = 0;
  const take = (partition, offset) => {
    if (offset <= (last.get(partition) ?? -1)) fail('offset repeated or out of order');
    last.set(partition, offset);
  };
  const started = performance.now();
  let ended;
  if (tool === 'gateway') {
    const http = gateway(1);
    const body = JSON.stringify({ topic: topicOf(tool, kase), timeout: 1000 });
    const headers = { 'kafka-auto-offset-reset': 'earliest' };
    let empty = 0;
    while (received < total) {
      const t = performance.now();
      let messages;
      try {
        messages = await http.post(`/consume/${group}/bench`, body, headers);
      } catch (error) {
        fail(String(error.message ?? error).slice(0, 120));
        if (Object.values(errors).reduce((a, b) => a + b, 0) > 20) break;
        continue;
      }
      const now = performance.now();
      if (first) latencies.push(now - t); // the first request waits for the group join
      if (messages.length === 0) {
        if (++empty > 30) {
          fail('no messages for 30 requests');
          break;
        }
        continue;
      }
      empty = 0;
      batches++;
      for (const m of messages) take(m.partition, m.offset);
      received += messages.length;
      first ??= { at: now, count: messages.length };
      ended = now;
    }
    await http.post(`/delete-consumer/${group}/bench`, '').catch((error) => fail(`delete-consumer: ${error.message}`));
    await http.close();
  } else {
    const timeout = new Promise((_, reject) => setTimeout(() => reject(new Error(`only ${received} of ${total} messages after 300 s`)), 300_000).unref());
    const read = client.consume(brokerName(topicOf(tool, kase)), brokerName(group), total, (partition, offsets) => {
      const now = performance.now();
      batches++;
      for (const offset of offsets) take(partition, offset);
      received += offsets.length;
      first ??= { at: now, count: offsets.length };
      ended = now;
    });
    await Promise.race([read, timeout]).catch((error) => fail(String(error.message ?? error).slice(0, 120)));
  }
  if (received < total) fail(`read ${received} of ${total} messages`);
  const seconds = first && ended > first.at ? (ended - first.at) / 1000 : NaN;
  return {
    requests: batches,
    messages: received,
    counted: received - (first?.count ?? 0),
    seconds,
    joinMs: first ? first.at - started : NaN,
    perBatch: received / batches,
  };
}

const clientBefore = process.cpuUsage();
const result = kase === 'consume' ? await consume(Number(arg)) : await produce(Number(arg));
const clientCpu = process.cpuUsage(clientBefore);
const sorted = Float64Array.from(latencies).sort();
const record = {
  kind: kase,
  tool,
  messagesPerSecond: (result.counted ?? result.messages) / result.seconds,
  requestsPerSecond: result.requests / result.seconds,
  p50: percentile(sorted, 0.5),
  p99: percentile(sorted, 0.99),
  ...result,
  ...(client ? { version: client.version } : {}),
  clientCpuUsPerMessage: (clientCpu.user + clientCpu.system) / result.messages,
  errors,
};
const failures = Object.entries(errors).map(([message, count]) => `${count}x ${message}`).join('; ');
const lat = latencies.length ? `  p50 ${record.p50.toFixed(2)} ms  p99 ${record.p99.toFixed(2)} ms` : '';
const extra = kase === 'consume' ? `  join ${Math.round(result.joinMs)} ms, ${Math.round(result.perBatch)} msg/batch` : '';
const cpu = `  client CPU ${record.clientCpuUsPerMessage.toFixed(1)} µs/msg`;
process.stderr.write(
  `${kase.padEnd(10)} ${tool.padEnd(12)} ${Math.round(record.messagesPerSecond).toString().padStart(7)} msg/s${lat}${extra}${cpu}${failures ? `  ERRORS: ${failures}` : ''}\n`,
);
process.stdout.write(`${JSON.stringify(record)}\n`);
process.exit(0); // clients may keep timers or sockets alive
