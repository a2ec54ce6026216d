// One timed load run for bench/kv (bench.ts): prints one JSON record on stdout, a readable line on stderr.
//
//   node bench/kv/load.mjs gateway|before|direct|redis-benchmark|server-alone set|get|pipeline-set|pipeline-get SECONDS
//
// gateway          autocannon, CONCURRENCY connections, POST / (one command) or POST /pipeline (10
//                  commands); the same body on every request.
// before           the same against BEFORE_URL, the baseline build of kv-gateway (BENCH_BASELINE in bench.ts).
// direct           ioredis on one connection, CONCURRENCY requests in flight (each awaits its reply
//                  and sends the next); a pipeline request is pipeline() of 10 commands.
// redis-benchmark  -c CONCURRENCY, -t set|get, -P 10 for the pipelines. It runs a request count, not
//                  a duration: a short probe run sizes -n to last about SECONDS.
// server-alone     redis-benchmark as above against a server of its own (REDIS_SERVER_COMMAND, no modules, no
//                  persistence) pinned alone on core 0, the gateway's core, which is idle meanwhile: "the engine's
//                  own rate on one core", the denominator of issue 35's targets, as the gateway gets one core.
//
// A request is one HTTP request, one awaited command or one pipeline; latency is per request.
// `requests` counts every request the process sent (for redis-benchmark, the probe's too): the
// harness divides the CPU time the gateway and Redis spent during the process by it.
// env: CONCURRENCY, GATEWAY_URL, BEFORE_URL, GATEWAY_TOKEN, REDIS_HOST, REDIS_PORT, REDIS_USER, REDIS_PASSWORD, REDIS_SERVER_COMMAND
import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import autocannon from 'autocannon';
import Redis from 'ioredis';
import { closedLoop } from '../lib/load.mjs';

const PIPELINE = 10;
const [tool, kase, seconds] = process.argv.slice(2);
const duration = Number(seconds);
const concurrency = Number(process.env.CONCURRENCY ?? 50);
const pipelined = kase.startsWith('pipeline-');
const batch = pipelined ? PIPELINE : 1;
const command = kase.endsWith('set') ? ['set', 'bench:k', 'xxx'] : ['get', 'bench:k'];

const latencies = []; // ms per request
const errors = {}; // message -> count
const fail = (message) => (errors[message] = (errors[message] ?? 0) + 1);

async function gateway(base) {
  const run = autocannon({
    url: base + (pipelined ? '/pipeline' : '/'),
    method: 'POST',
    headers: { authorization: `Bearer ${process.env.GATEWAY_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify(pipelined ? Array(PIPELINE).fill(command) : command),
    connections: concurrency,
    duration,
  });
  // autocannon's own histogram has 1 ms resolution; its response event gives the exact time.
  run.on('response', (_client, status, _bytes, ms) => (status === 200 ? latencies.push(ms) : fail(`HTTP ${status}`)));
  run.on('reqError', (error) => fail(String(error.message ?? error)));
  const result = await run;
  return { requests: latencies.length, seconds: result.duration };
}

async function direct() {
  const { REDIS_HOST: host, REDIS_PORT: port, REDIS_USER: username, REDIS_PASSWORD: password } = process.env;
  const redis = new Redis({ host, port: Number(port), username, password, lazyConnect: true });
  await redis.connect();
  const send = pipelined
    ? async () => {
        for (const [error] of await redis.pipeline(Array(PIPELINE).fill(command)).exec()) if (error) throw error;
      }
    : () => redis.call(...command);
  const elapsed = await closedLoop({ seconds: duration, concurrency, send, latencies, fail: (error) => fail(error.message) });
  redis.disconnect();
  return { requests: latencies.length, seconds: elapsed };
}

function redisBenchmark({ host, port, user, password } = { host: process.env.REDIS_HOST, port: process.env.REDIS_PORT, user: process.env.REDIS_USER, password: process.env.REDIS_PASSWORD }) {
  const run = (n) => {
    const auth = user ? ['--user', user, '-a', password] : [];
    const args = ['-h', host, '-p', port, ...auth, '-c', concurrency, '-P', batch, '-d', 3, '-t', command[0], '-n', n, '--csv'];
    const { stdout, stderr, status } = spawnSync('redis-benchmark', args.map(String), { encoding: 'utf8' });
    // "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
    const row = stdout.split('\n').find((line) => line.startsWith(`"${command[0].toUpperCase()}"`));
    if (status !== 0 || !row) throw new Error(`redis-benchmark failed (${status}): ${stdout}${stderr}`);
    const [, rps, , , p50, , p99] = row.replaceAll('"', '').split(',').map(Number);
    return { rps, p50, p99 };
  };
  const probeCommands = 20_000 * batch;
  const probe = run(probeCommands);
  const commands = Math.round(probe.rps * duration);
  const { rps, p50, p99 } = run(commands);
  return { commandsPerSecond: rps, p50, p99, requests: (probeCommands + commands) / batch };
}

/** redis-benchmark against a server of its own, alone on core 0 (see the header), stopped afterwards. */
async function serverAlone() {
  const port = await new Promise((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
  const server = spawn('taskset', ['-c', '0', process.env.REDIS_SERVER_COMMAND, '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  try {
    for (let i = 0; spawnSync('redis-cli', ['-p', String(port), 'ping'], { encoding: 'utf8' }).stdout.trim() !== 'PONG'; i++) {
      if (i === 100) throw new Error(`${process.env.REDIS_SERVER_COMMAND} did not answer on port ${port}`);
      await sleep(50);
    }
    return redisBenchmark({ host: '127.0.0.1', port });
  } finally {
    server.kill('SIGKILL');
  }
}

function percentile(sorted, q) {
  return sorted.length ? sorted[Math.max(0, Math.ceil(q * sorted.length) - 1)] : NaN;
}

let record;
if (tool === 'redis-benchmark' || tool === 'server-alone') {
  const { commandsPerSecond, p50, p99, requests } = tool === 'redis-benchmark' ? redisBenchmark() : await serverAlone();
  record = { requestsPerSecond: commandsPerSecond / batch, commandsPerSecond, p50, p99, requests };
} else {
  const { requests, seconds: elapsed } = tool === 'direct' ? await direct() : await gateway(tool === 'before' ? process.env.BEFORE_URL : process.env.GATEWAY_URL);
  const sorted = Float64Array.from(latencies).sort();
  const requestsPerSecond = requests / elapsed;
  record = { requestsPerSecond, commandsPerSecond: requestsPerSecond * batch, p50: percentile(sorted, 0.5), p99: percentile(sorted, 0.99), requests };
}
record = { tool, case: kase, ...record, errors };

const failures = Object.entries(errors).map(([message, count]) => `${count}x ${message}`).join('; ');
process.stderr.write(
  `${kase.padEnd(13)} ${tool.padEnd(16)} ${Math.round(record.requestsPerSecond).toString().padStart(7)} req/s` +
    `${pipelined ? ` ${Math.round(record.commandsPerSecond).toString().padStart(8)} cmd/s` : ''}` +
    `  p50 ${record.p50.toFixed(2)} ms  p99 ${record.p99.toFixed(2)} ms${failures ? `  ERRORS: ${failures}` : ''}\n`,
);
process.stdout.write(`${JSON.stringify(record)}\n`);
