// One load run of bench/workflow (bench.ts says what each case does). Prints one JSON record:
// {kind: 'workflow', case, requests, seconds, perSecond, loadCpuUs, errors}; `requests` are messages (single) or steps
// (workflow), which the harness divides the CPU time by.
//
//   node bench/workflow/load.mjs single <messages> | workflow <runs>
// env: GATEWAY_URL, QUEUE_TOKEN, CURRENT_SIGNING_KEY, NEXT_SIGNING_KEY, SINK_PORT, APP_PORT, BENCH_CONCURRENCY,
//      BENCH_STEPS, BENCH_CONCURRENT_RUNS
import { createServer } from 'node:http';
import { Client as QStashClient, Receiver } from '@upstash/qstash';
import { Client as WorkflowClient, serve } from '@upstash/workflow';

const [kase, countText] = process.argv.slice(2);
const count = Number(countText);
const env = process.env;
const errors = {};
const fail = (error) => {
  const message = String(error?.message ?? error).slice(0, 120);
  errors[message] = (errors[message] ?? 0) + 1;
};

/** Serves `handle(req, body)` on 127.0.0.1:port until `close`. */
async function listen(port, handle) {
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => handle(req, Buffer.concat(chunks), res));
  });
  server.keepAliveTimeout = 60_000;
  await new Promise((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }) };
}

async function single() {
  let arrived = 0;
  let done;
  const finished = new Promise((resolve) => (done = resolve));
  const sink = await listen(Number(env.SINK_PORT), (_req, _body, res) => {
    res.end('ok');
    if (++arrived === count) done();
  });
  const url = `${env.GATEWAY_URL}/v2/publish/http://127.0.0.1:${env.SINK_PORT}/sink`;
  const started = performance.now();
  let next = 0;
  const publisher = async () => {
    while (next < count) {
      next++;
      try {
        const response = await fetch(url, { method: 'POST', headers: { authorization: `Bearer ${env.QUEUE_TOKEN}`, 'upstash-retries': '0' }, body: 'x'.repeat(100) });
        if (response.status !== 201) fail(`publish ${response.status}`);
        await response.arrayBuffer();
      } catch (error) {
        fail(error);
      }
    }
  };
  await Promise.all(Array.from({ length: Number(env.BENCH_CONCURRENCY ?? 64) }, publisher));
  await finished;
  const seconds = (performance.now() - started) / 1000;
  await sink.close();
  return { requests: count, seconds, perSecond: count / seconds };
}

async function workflow() {
  const steps = Number(env.BENCH_STEPS ?? 10);
  const qstash = new QStashClient({ baseUrl: env.GATEWAY_URL, token: env.QUEUE_TOKEN });
  // The app verifies every delivery's signature, as a deployed workflow does, unless BENCH_APP_VERIFY=0 (the load core
  // then spends less per step: the services' own cost shows without the app's).
  const receiver = env.BENCH_APP_VERIFY === '0' ? undefined : new Receiver({ currentSigningKey: env.CURRENT_SIGNING_KEY, nextSigningKey: env.NEXT_SIGNING_KEY });
  const ended = new Map();
  const { handler } = serve(
    async (context) => {
      let total = 0;
      for (let i = 1; i <= steps; i++) total = await context.run(`step-${i}`, () => total + 1);
      await context.run('end', () => ended.get(context.requestPayload.run)?.());
      return total;
    },
    { qstashClient: qstash, receiver, disableTelemetry: true },
  );
  const base = `http://127.0.0.1:${env.APP_PORT}`;
  const app = await listen(Number(env.APP_PORT), (req, body, res) => {
    handler(new Request(`${base}${req.url}`, { method: req.method, headers: Object.entries(req.headers).filter(([, v]) => typeof v === 'string'), body }))
      .then(async (response) => res.writeHead(response.status).end(Buffer.from(await response.arrayBuffer())))
      .catch((error) => {
        fail(error);
        res.writeHead(500).end();
      });
  });
  const client = new WorkflowClient({ baseUrl: env.GATEWAY_URL, token: env.QUEUE_TOKEN });
  const started = performance.now();
  let next = 0;
  const runner = async () => {
    while (next < count) {
      const run = next++;
      const end = new Promise((resolve) => ended.set(run, resolve));
      try {
        await client.trigger({ url: `${base}/chain`, body: { run }, retries: 0 });
        await Promise.race([end, new Promise((_, reject) => setTimeout(() => reject(new Error('a run took over 120 s')), 120_000).unref())]);
      } catch (error) {
        fail(error);
      }
      ended.delete(run);
    }
  };
  await Promise.all(Array.from({ length: Number(env.BENCH_CONCURRENT_RUNS ?? 100) }, runner));
  const seconds = (performance.now() - started) / 1000;
  await app.close();
  // A step: each `context.run` of the chain (the initial delivery and the closing `end` step are not counted).
  const requests = count * steps;
  return { requests, seconds, perSecond: requests / seconds };
}

const cpuBefore = process.cpuUsage();
const result = kase === 'single' ? await single() : kase === 'workflow' ? await workflow() : (() => { throw new Error(`unknown case ${kase}`); })();
// The load's own CPU (the workflow app and the SDK's client, or the publisher and its sink) per request, µs.
const cpu = process.cpuUsage(cpuBefore);
process.stdout.write(`${JSON.stringify({ kind: 'workflow', case: kase, ...result, loadCpuUs: (cpu.user + cpu.system) / result.requests, errors })}\n`);
