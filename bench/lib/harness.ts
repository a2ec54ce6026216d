// The benchmark harness shared by bench/kv, bench/vector, bench/queue (and bench/stream): each
// bench/<name>/bench.ts declares its stack, its load runs and its report; this file starts the stack
// through libs/platform/util-stack, pins the CPUs, warms up, runs interleaved rounds, measures the CPU
// time of the gateway and of the engine around every run, and hands the records to the bench's
// report.mjs (medians, results.md, its section of docs/benchmarks.md, the history of its ratios and their chart).
//
// CPU placement (2 cores): the services under test (the gateway; queue-worker, ...) alone on core 0,
// the engines and the load generators on core 1, so that the engine has the same CPU for a direct run
// and a gateway run and the gateway's CPU is not taken from the engine. A bench without a direct case
// whose load outweighs the services (bench/workflow) puts the engines on core 0 instead (enginesWithGateway).
//
// CPU per request, from the processes' own accounting: /proc/<pid>/stat (utime + stime, all threads)
// of every service and engine process, and for Redis engines INFO's used_cpu_user + used_cpu_sys,
// read just before a load process starts and just after it exits, divided by the requests it counted.
// It holds steadier than throughput on a shared machine: a busier neighbour takes CPU away (fewer
// requests per second) more than it changes the CPU a request costs.
//
// A Redis engine with AOF on (the queue's) has its AOF rewritten before every run and no automatic
// rewrite during one (auto-aof-rewrite-percentage 0): left on, a rewrite fired every few seconds as the
// data grew, its child competing with the engine and the load on core 1 for one to three seconds, in
// whichever run it fell (bench/queue: direct single rounds of 7,249, 5,102 and 4,865 msg/s in one run).
//
// BENCH_SMOKE=1: a smoke run (part of `make test`): the bench's short settings, one round, no warm-up,
// nothing written but a scratch report; exits non-zero unless every run of the round produced
// requests, a CPU time per request and no errors.
// A full run with any setting overridden (e.g. BENCH_CASES=sparse) prints its table but leaves
// docs/benchmarks.md, bench/<name>/results.md and bench/<name>/history*.tsv alone: only the bench's own settings publish.
import { execFileSync, spawn } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { type ProcessSpec, type Running, type Stack, type StackOptions, processAlive as alive, processCpuSeconds, repoRoot, startProcess, startStack } from '@restash/platform/util-stack';

/** Where a published run writes its results and the chart of its ratios (bench/lib/report.mjs, writeDocsSection). */
const BENCHMARKS_PAGE = 'docs/benchmarks.md';

/**
 * A bench's settings: the environment variable, its value for a full run and for a smoke run, or one value for
 * both (docs/benchmarks.md). A smoke run has no warm-up, so the warm-up's settings need no smoke value.
 */
export type Settings = Record<string, string | { full: string; smoke: string }>;

/** A setting's values for a full and for a smoke run. */
const valuesOf = (setting: Settings[string]) => (typeof setting === 'string' ? { full: setting, smoke: setting } : setting);

/** One load process: `node bench/<name>/load.mjs ...args`, printing one JSON record per run on stdout. */
export interface LoadRun {
  args: string[];
  /** More environment for this run (e.g. CONCURRENCY). */
  env?: Record<string, string>;
}

/** The settings every bench has unless it declares its own: BENCH_ROUNDS interleaved rounds (3; one in a smoke run). */
const DEFAULT_SETTINGS: Settings = { BENCH_ROUNDS: { full: '3', smoke: '1' } };

/** What a bench's hooks get: the stack, the settings in force, where to write scratch files. */
export interface BenchContext {
  stack: Stack;
  settings: Record<string, string>;
  smoke: boolean;
  /** A scratch folder, removed at the end (BENCH_KEEP_LOGS=1 keeps it). */
  tmp: string;
  /** Environment of every script (the bench's `env`, the settings, NPROC). */
  env: Record<string, string>;
  /** Runs `node <script> ...args` on the load CPU; its stdout lines that are JSON records are kept for the report. */
  script(script: string, args: string[], env?: Record<string, string>): Promise<void>;
  say(line: string): void;
}

/** A benchmark, as its bench.ts declares it. */
export interface Bench {
  /** bench/<name>, `make bench-<name>`. */
  name: string;
  /** Its settings; BENCH_ROUNDS, when it has none, is {@link DEFAULT_SETTINGS}'s. */
  settings: Settings;
  /** Runs before the stack starts (e.g. the vector corpus and its embeddings); resolves with more environment for the scripts. */
  before?(context: Omit<BenchContext, 'stack'>): Promise<Record<string, string>>;
  /** What to start (the harness adds `from: 'dist'` and the CPU pinning). */
  stack(settings: Record<string, string>): Omit<StackOptions, 'from' | 'cpus' | 'stateDir'>;
  /** The services under test (process names): pinned to core 0 with the gateway; their CPU is "gateway" CPU. */
  gateway: string[];
  /**
   * The engines on core 0 with the services, the load alone on core 1: for a bench with no direct case, whose load
   * costs more CPU than the services (bench/workflow: the workflow app and the SDK), so that the load core does not
   * bound what is measured. Default: the engines on the load's core.
   */
  enginesWithGateway?: boolean;
  /**
   * The engine (process name) whose CPU per request is reported; `redis`: read from its INFO (as the
   * gateway's ACL user for a KV database's server) rather than /proc.
   */
  engine: { process: string; redis?: boolean };
  /**
   * More Redis engines of the stack (process names, e.g. `queue-redis-q2`, a queue server of StackOptions.queueServers),
   * measured from INFO as `engine` is, and each reported in `processesUs`; their AOF is rewritten before each run too.
   */
  moreRedis?: string[];
  /** More processes of the bench (e.g. the direct case's worker), started after the stack on the gateway's core. */
  extras?(context: BenchContext): ProcessSpec[];
  /** Environment of the load, prepare and report scripts, once the stack runs. */
  env(stack: Stack, settings: Record<string, string>): Record<string, string> | Promise<Record<string, string>>;
  /** Sanity requests and data loading, after the stack (and extras) started. */
  prepare?(context: BenchContext): Promise<void>;
  /** The load runs of the warm-up and of one round, in order. */
  runs(settings: Record<string, string>): { warmup: LoadRun[]; round: LoadRun[] };
  /** More environment of report.mjs (versions). */
  reportEnv?(context: BenchContext): Record<string, string>;
  /** Log lines of a process worth showing after the runs (default: /error|warn/i). */
  logProblems?: Record<string, RegExp>;
}

/** What every load record carries, and what the harness adds to it. */
interface LoadRecord {
  requests?: number;
  errors?: Record<string, number>;
  cpu?: CpuPerRequest;
  [key: string]: unknown;
}

/** CPU time per request of one run, µs: the gateway's (sum of its processes), the engine's, and each process's. */
interface CpuPerRequest {
  gatewayUs: number;
  engineUs: number;
  processesUs: Record<string, number>;
}

const say = (line: string) => process.stdout.write(`${line}\n`);

/**
 * Runs a benchmark: stack, extras, prepare, warm-up, BENCH_ROUNDS interleaved rounds, log checks,
 * report (or, with BENCH_SMOKE=1, the smoke check). Exits the process: 0, or 1 with the reason.
 */
export function runBench(bench: Bench): void {
  main(bench).then(
    (code) => process.exit(code),
    (error: unknown) => {
      process.stderr.write(`bench-${bench.name}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
      process.exit(1);
    },
  );
}

async function main(bench: Bench): Promise<number> {
  const root = repoRoot();
  process.chdir(root);
  const smoke = process.env.BENCH_SMOKE === '1';
  const declared = Object.entries({ ...DEFAULT_SETTINGS, ...bench.settings }).map(([name, setting]) => [name, valuesOf(setting)] as const);
  const settings = Object.fromEntries(
    declared.map(([name, values]) => [name, smoke ? values.smoke : (process.env[name] ?? values.full)]),
  );
  if (smoke) settings.BENCH_ROUNDS = '1';
  const nproc = cpus().length;
  const pinned = nproc >= 2;
  if (!pinned) say('warning: fewer than 2 cores; nothing is pinned, the gateway and the load share the CPU');
  const [gatewayCpu, loadCpu] = pinned ? ['0', '1'] : [undefined, undefined];
  const tmp = mkdtempSync(join(process.env.TMPDIR ?? '/tmp', `restash-bench-${bench.name}-`));
  const results = join(tmp, 'results.jsonl');
  const extras: Array<{ name: string; running: Running }> = [];
  let stack: Stack | undefined;
  const cleanup = async () => {
    for (const { running } of extras) await running.stop().catch(() => undefined);
    await stack?.stop().catch(() => undefined);
    if (process.env.BENCH_KEEP_LOGS === '1') say(`logs kept in ${tmp}`);
    else rmSync(tmp, { recursive: true, force: true });
  };
  let interrupted = false;
  const onSignal = () => {
    interrupted = true;
    void cleanup().then(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  try {
    const baseEnv: Record<string, string> = { ...settings, NPROC: String(nproc) };
    const scriptRunner = (env: () => Record<string, string>) => (script: string, args: string[], more: Record<string, string> = {}) =>
      runScript(script, args, { ...env(), ...more }, loadCpu, (line) => appendFileSync(results, `${line}\n`));
    Object.assign(baseEnv, await bench.before?.({ settings, smoke, tmp, env: baseEnv, script: scriptRunner(() => baseEnv), say }));

    const options = bench.stack(settings);
    const engineCpu = bench.enginesWithGateway ? gatewayCpu : loadCpu;
    const engineCpus = Object.fromEntries(['control-redis', 'queue-redis', 'kv-redis', 'qdrant-local', 'kafka'].map((name) => [name, engineCpu]));
    const gatewayCpus = Object.fromEntries(bench.gateway.map((name) => [name, gatewayCpu]));
    say(`starting the stack (${[...(options.apps ?? [])].join(', ')} from dist/)`);
    stack = await startStack({
      ...options,
      stateDir: join(tmp, 'stack'),
      from: 'dist',
      ...(pinned ? { cpus: { ...engineCpus, ...gatewayCpus } } : {}),
      appEnv: Object.fromEntries((options.apps ?? []).map((app) => [app, { LOG_LEVEL: 'warn', ...options.appEnv?.[app] }])),
    });
    const env = { ...baseEnv, ...(await bench.env(stack, settings)) };
    const context: BenchContext = { stack, settings, smoke, tmp, env, script: scriptRunner(() => env), say };
    for (const spec of bench.extras?.(context) ?? []) {
      const running = await startProcess({ ...spec, logFile: join(tmp, `${spec.name}.log`), ...(gatewayCpu ? { cpus: gatewayCpu } : {}) });
      extras.push({ name: spec.name, running });
    }
    await bench.prepare?.(context);

    const pids = (): Record<string, number> => ({
      ...Object.fromEntries(stack?.processes().map((p) => [p.name, p.pid]) ?? []),
      ...Object.fromEntries(extras.map(({ name, running }) => [name, running.pid])),
    });
    const engineRedis = bench.engine.redis ? redisOf(stack, bench.engine) : undefined;
    const moreRedis = (bench.moreRedis ?? []).map((process) => ({ process, redis: redisOf(stack as Stack, { process }) }));
    const measured = [...bench.gateway, bench.engine.process];
    const sample = async () => {
      const byPid = pids();
      const seconds: Record<string, number> = {};
      for (const name of measured) seconds[name] = cpuOf(byPid[name]);
      if (engineRedis) seconds[bench.engine.process] = await redisCpuSeconds(engineRedis);
      for (const { process, redis } of moreRedis) seconds[process] = await redisCpuSeconds(redis);
      return seconds;
    };
    const load = async (run: LoadRun, keep: boolean) => {
      if (engineRedis) await rewriteAof(engineRedis);
      for (const { redis } of moreRedis) await rewriteAof(redis);
      const before = await sample();
      const lines: string[] = [];
      await runScript(join('bench', bench.name, 'load.mjs'), run.args, { ...env, ...run.env }, loadCpu, (line) => lines.push(line));
      const after = await sample();
      for (const line of lines) {
        const record = JSON.parse(line) as LoadRecord;
        record.cpu = cpuPerRequest(before, after, record.requests ?? NaN, bench);
        if (keep) appendFileSync(results, `${JSON.stringify(record)}\n`);
        say(`    CPU per request: gateway ${us(record.cpu.gatewayUs)}, ${bench.engine.process} ${us(record.cpu.engineUs)}`);
      }
    };

    const { warmup, round } = bench.runs(settings);
    if (!smoke && warmup.length > 0) {
      say('\nwarm-up (not counted)');
      for (const run of warmup) await load(run, false);
    }
    const rounds = Number(settings.BENCH_ROUNDS ?? 1);
    for (let r = 1; r <= rounds; r++) {
      say(`\nround ${r}/${rounds}`);
      for (const run of round) await load(run, true);
    }
    engineRedis?.disconnect();
    for (const { redis } of moreRedis) redis.disconnect();

    let failed = false;
    for (const [name, pid] of Object.entries(pids())) {
      if (!alive(pid)) {
        say(`${name} died; the end of its log:\n${tailOf(join(tmp, 'stack/logs', `${name}.log`))}`);
        failed = true;
      }
    }
    for (const name of [...bench.gateway, ...extras.map((e) => e.name)]) {
      const file = extras.some((e) => e.name === name) ? join(tmp, `${name}.log`) : join(tmp, 'stack/logs', `${name}.log`);
      const problems = readLines(file).filter((line) => (bench.logProblems?.[name] ?? /error|warn/i).test(line));
      if (problems.length > 0) say(`\n${name} logged errors or warnings (first 20 lines):\n${problems.slice(0, 20).join('\n')}`);
    }

    const records = readLines(results).map((line) => JSON.parse(line) as LoadRecord & { kind?: string });
    const reportEnv = { ...env, ...bench.reportEnv?.(context) };
    const report = join('bench', bench.name, 'report.mjs');
    if (smoke) {
      const problems = smokeProblems(records.filter((r) => r.cpu), round.length);
      await runScript(report, [results, join(tmp, 'results.md')], reportEnv, undefined, (line) => say(line));
      if (failed || problems.length > 0) {
        say(`\nbench-${bench.name} smoke run FAILED:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
        return 1;
      }
      say(`\nbench-${bench.name} smoke run: every run produced requests, CPU per request and no errors`);
      return 0;
    }
    // Only a run with the bench's own settings is the published table; one with overrides just prints.
    const overridden = declared
      .filter(([name, values]) => process.env[name] !== undefined && process.env[name] !== values.full)
      .map(([name]) => name);
    if (overridden.length > 0) {
      await runScript(report, [results, join(tmp, 'results.md')], reportEnv, undefined, (line) => say(line));
      say(`\nsettings overridden (${overridden.join(', ')}): results printed above, docs/benchmarks.md and bench/${bench.name}/ left as they were`);
      return failed ? 1 : 0;
    }
    await runScript(report, [results, join('bench', bench.name, 'results.md'), BENCHMARKS_PAGE], reportEnv, undefined, (line) => say(line));
    say(`\nresults in bench/${bench.name}/ (results, history) and ${BENCHMARKS_PAGE} (between the bench-${bench.name} markers, and the chart)`);
    return failed ? 1 : 0;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    if (!interrupted) await cleanup();
  }
}

/** Runs `node <script> ...args` (pinned when `cpu` is set); stdout lines that are JSON objects go to `record`, the rest and stderr are shown. */
function runScript(script: string, args: string[], env: Record<string, string>, cpu: string | undefined, record: (line: string) => void): Promise<void> {
  const command = cpu === undefined ? [process.execPath, script, ...args] : ['taskset', '-c', cpu, process.execPath, script, ...args];
  return new Promise((resolve, reject) => {
    const child = spawn(command[0] as string, command.slice(1), { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
    let pending = '';
    child.stdout.on('data', (chunk: Buffer) => {
      pending += chunk.toString('utf8');
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) (line.startsWith('{') ? record : say)(line);
    });
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (pending) (pending.startsWith('{') ? record : say)(pending);
      if (code === 0) resolve();
      else reject(new Error(`${script} ${args.join(' ')} failed (${signal ?? `exit code ${code}`})`));
    });
  });
}

function cpuPerRequest(before: Record<string, number>, after: Record<string, number>, requests: number, bench: Bench): CpuPerRequest {
  const perRequest = (name: string) => (((after[name] ?? NaN) - (before[name] ?? NaN)) / requests) * 1e6;
  const processesUs = Object.fromEntries(Object.keys(after).map((name) => [name, perRequest(name)]));
  const gatewayUs = bench.gateway.reduce((sum, name) => sum + (processesUs[name] ?? 0), 0);
  return { gatewayUs, engineUs: processesUs[bench.engine.process] ?? NaN, processesUs };
}

/** A Redis client of the engine (for INFO): its port from the stack; a KV database's server as the gateway's ACL user. */
function redisOf(stack: Stack, engine: Bench['engine']): Redis {
  const server = [stack.control, stack.queueRedis, ...stack.queueServers.values(), ...stack.kvRedis.values()].find((s) => s && stack.processes().some((p) => p.name === engine.process && p.pid === s.pid));
  if (!server) throw new Error(`no Redis engine named ${engine.process} in the stack`);
  return new Redis({ port: server.port, host: '127.0.0.1', ...(engine.process.startsWith('kv-redis-') ? stack.dataRedisAuth : {}) });
}

/**
 * When the server keeps an AOF: turns its automatic rewrite off, rewrites it now (BGREWRITEAOF) and waits until
 * the rewrite is over, so that none runs during the next load run (see the header).
 */
async function rewriteAof(redis: Redis): Promise<void> {
  const [, appendonly] = (await redis.config('GET', 'appendonly')) as string[];
  if (appendonly !== 'yes') return;
  await redis.config('SET', 'auto-aof-rewrite-percentage', '0');
  const busy = async () => /^aof_rewrite_(in_progress|scheduled):1/m.test(await redis.info('persistence'));
  try {
    await redis.bgrewriteaof();
  } catch (error) {
    // One already under way (an automatic one, started before it was turned off) will do.
    if (!/already in progress/i.test(String(error))) throw error;
  }
  while (await busy()) await new Promise((resolve) => setTimeout(resolve, 50));
}

/** used_cpu_user + used_cpu_sys of INFO cpu: the server's own accounting, all threads, in seconds. */
async function redisCpuSeconds(redis: Redis): Promise<number> {
  const info = await redis.info('cpu');
  const field = (name: string) => Number(new RegExp(`^${name}:(\\S+)`, 'm').exec(info)?.[1] ?? NaN);
  return field('used_cpu_user') + field('used_cpu_sys');
}

const cpuOf = (pid: number | undefined) => {
  try {
    return pid === undefined ? NaN : processCpuSeconds(pid);
  } catch {
    return NaN;
  }
};

/** Why a smoke round does not count: a run without records, requests, CPU per request, or with errors. */
function smokeProblems(records: LoadRecord[], runs: number): string[] {
  const problems: string[] = [];
  if (records.length < runs) problems.push(`${records.length} records for ${runs} runs`);
  for (const r of records) {
    const label = [r.kind, r.tool, r.case].filter(Boolean).join(' ');
    if (!(Number(r.requests) > 0)) problems.push(`${label}: no requests`);
    if (r.errors && Object.keys(r.errors).length > 0) problems.push(`${label}: errors ${JSON.stringify(r.errors)}`);
    if (!Number.isFinite(r.cpu?.engineUs) || !Number.isFinite(r.cpu?.gatewayUs)) problems.push(`${label}: no CPU per request`);
  }
  return problems;
}

const us = (n: number) => (Number.isFinite(n) ? `${n.toFixed(1)} µs` : 'n/a');

function readLines(file: string): string[] {
  try {
    return readFileSync(file, 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

function tailOf(file: string): string {
  return readLines(file).slice(-30).join('\n');
}

/** `redis-server --version`'s v=…, for the reports. */
export function redisVersion(): string {
  return /v=(\S+)/.exec(execFileSync('redis-server', ['--version'], { encoding: 'utf8' }))?.[1] ?? 'unknown';
}
