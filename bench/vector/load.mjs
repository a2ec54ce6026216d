// One timed query load run for bench/vector/bench.ts: prints one JSON record on stdout, a readable
// line on stderr.
//
//   node bench/vector/load.mjs gateway|direct SECONDS [dense|sparse|hybrid]
//
// Closed loop: CONCURRENCY requests in flight over as many keep-alive connections (node:http), each
// sending the next as soon as its answer is read, cycling through the held-out queries of the case
// (the request bodies are serialised before the clock starts). The requests are common.mjs's
// queryRequest: gateway POST /query on the case's index with its token; direct the Qdrant query on
// the gateway's collection of that index.
// A request counts when it answered 200 with as many results as a complete answer has (10; for a
// sparse query matching fewer rows, that many); latency is per request.
// env: see common.mjs; CONCURRENCY (16)
import { closedLoop } from '../lib/load.mjs';
import { answerIds, exactSparse, gatewayClient, loadData, qdrantClient, queryRequest, TOP_K } from './common.mjs';

const [tool, seconds, kase = 'dense'] = process.argv.slice(2);
const duration = Number(seconds);
const concurrency = Number(process.env.CONCURRENCY ?? 16);

const data = loadData();
const asked = data.asked[kase];
// A sparse query returns only the rows sharing a token with it: fewer than 10 when fewer match.
const expected = kase === 'sparse' ? exactSparse(data, data.members.sparse, asked).map((t) => t.expected) : asked.map(() => TOP_K);
const requests = asked.map((q, k) => {
  const { path, body } = queryRequest(kase, tool, data, q);
  return { path, body: Buffer.from(JSON.stringify(body)), expected: expected[k] };
});
const http = tool === 'gateway' ? gatewayClient(concurrency, kase) : qdrantClient(concurrency);

const latencies = []; // ms per request
const errors = {}; // message -> count
const fail = (message) => (errors[message] = (errors[message] ?? 0) + 1);

const send = async (n) => {
  const { path, body, expected: count } = requests[n % requests.length];
  const ids = answerIds[tool](JSON.parse(await http.request('POST', path, body)));
  if (ids.length !== count) throw new Error(`${ids.length} results, ${count} expected`);
};
const elapsed = await closedLoop({ seconds: duration, concurrency, send, latencies, fail: (error) => fail(error.message.slice(0, 120)) });
http.close();

const percentile = (sorted, q) => (sorted.length ? sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)] : NaN);
const sorted = Float64Array.from(latencies).sort();
const record = {
  kind: 'query',
  case: kase,
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
  `query ${kase.padEnd(6)} ${tool.padEnd(8)} ${Math.round(record.requestsPerSecond).toString().padStart(6)} req/s` +
    `  p50 ${record.p50.toFixed(2)} ms  p99 ${record.p99.toFixed(2)} ms${failures ? `  ERRORS: ${failures}` : ''}\n`,
);
process.stdout.write(`${JSON.stringify(record)}\n`);
