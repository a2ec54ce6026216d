// One timed query load run for bench/vector/run.sh: prints one JSON record on stdout, a readable
// line on stderr.
//
//   node bench/vector/load.mjs gateway|direct SECONDS
//
// Closed loop: CONCURRENCY requests in flight over as many keep-alive connections (node:http), each
// sending the next as soon as its answer is read, cycling through the held-out query vectors (the
// request bodies are serialised before the clock starts).
// gateway  POST /query {vector, topK: 10}, Bearer token
// direct   POST /collections/COLLECTION/points/query on qdrant-local, the request the gateway makes
//          for that query: {query, filter: ns = "", limit: 10, offset: 0, with_payload: [id, seq]}
// A request counts when it answered 200 with 10 results; latency is per request.
// env: see common.mjs; CONCURRENCY (16)
import { answerIds, gatewayClient, loadData, qdrantClient, queryRequest, TOP_K } from './common.mjs';

const [tool, seconds] = process.argv.slice(2);
const duration = Number(seconds);
const concurrency = Number(process.env.CONCURRENCY ?? 16);

const { queries } = loadData();
const requests = queries.map((vector) => {
  const { path, body } = queryRequest[tool](vector);
  return { path, body: Buffer.from(JSON.stringify(body)) };
});
const http = tool === 'gateway' ? gatewayClient(concurrency) : qdrantClient(concurrency);

const latencies = []; // ms per request
const errors = {}; // message -> count
const fail = (message) => (errors[message] = (errors[message] ?? 0) + 1);

let next = 0;
let stop = false;
setTimeout(() => (stop = true), duration * 1000);
const started = performance.now();
const worker = async () => {
  while (!stop) {
    const { path, body } = requests[next++ % requests.length];
    const t = performance.now();
    try {
      const ids = answerIds[tool](JSON.parse(await http.request('POST', path, body)));
      if (ids.length !== TOP_K) throw new Error(`${ids.length} results`);
      latencies.push(performance.now() - t);
    } catch (error) {
      fail(error.message.slice(0, 120));
    }
  }
};
await Promise.all(Array.from({ length: concurrency }, worker));
const elapsed = (performance.now() - started) / 1000;
http.close();

const percentile = (sorted, q) => (sorted.length ? sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)] : NaN);
const sorted = Float64Array.from(latencies).sort();
const record = {
  kind: 'query',
  tool,
  requestsPerSecond: latencies.length / elapsed,
  p50: percentile(sorted, 0.5),
  p99: percentile(sorted, 0.99),
  requests: latencies.length,
  seconds: elapsed,
  errors,
};
const failures = Object.entries(errors).map(([message, count]) => `${count}x ${message}`).join('; ');
process.stderr.write(
  `query ${tool.padEnd(8)} ${Math.round(record.requestsPerSecond).toString().padStart(6)} req/s` +
    `  p50 ${record.p50.toFixed(2)} ms  p99 ${record.p99.toFixed(2)} ms${failures ? `  ERRORS: ${failures}` : ''}\n`,
);
process.stdout.write(`${JSON.stringify(record)}\n`);
