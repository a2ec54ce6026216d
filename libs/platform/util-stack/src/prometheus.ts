import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { answers200, freePort, inTemporaryDir, startProcess } from './process';

/** Debian's Prometheus server and its tool (package `prometheus`, installed by deploy/prometheus/install.sh). */
export const PROMETHEUS_BIN = '/usr/bin/prometheus';
export const PROMTOOL_BIN = '/usr/bin/promtool';

/**
 * Throws when Debian's Prometheus binaries are missing.
 * @throws Error naming deploy/prometheus/install.sh
 */
export function requirePrometheus(): void {
  for (const bin of [PROMETHEUS_BIN, PROMTOOL_BIN]) {
    if (!existsSync(bin)) throw new Error(`${bin} is missing: run bash deploy/prometheus/install.sh (Debian's prometheus package)`);
  }
}

/** One scraped endpoint: a service's management server. */
export interface PrometheusTarget {
  /** The scrape job, e.g. the app's name (`kv-gateway`): the `job` label of its series. */
  job: string;
  /** `http://<host>:<port>` of its management server (an AppProcess's `managementUrl`). */
  url: string;
  /** The path of its metrics; `/metrics` by default. */
  path?: string;
  /** More labels on its series (e.g. `namespace`, `service`, `endpoint`, as the Prometheus Operator sets them). */
  labels?: Record<string, string>;
}

/** How {@link startPrometheus} runs the server. */
export interface PrometheusOptions {
  /** Static targets, one scrape job per distinct `job`. */
  targets?: PrometheusTarget[];
  /** More `scrape_configs` entries, as Prometheus takes them (e.g. `kubernetes_sd_configs` for a cluster's pods). */
  scrapeConfigs?: object[];
  /** Rule files (paths) to load, e.g. charts/restash/files/prometheus-rules.yaml. */
  ruleFiles?: string[];
  /** Scrape and rule evaluation interval in seconds; 1 by default. */
  intervalSeconds?: number;
  /** The HTTP port on 127.0.0.1; a free one by default. */
  port?: number;
  /** A file for its log; by default its tail is kept in memory. */
  logFile?: string;
}

/** One series of an instant query's vector result: its labels and value. */
export interface PromSample {
  metric: Record<string, string>;
  /** The sample's value (`NaN` and `±Inf` as Prometheus writes them become those numbers). */
  value: number;
}

/** A running Prometheus server. */
export interface PrometheusServer {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  /** The configuration it was started with (YAML, written as JSON). */
  config: object;
  /**
   * An instant query (`GET /api/v1/query`), evaluated now.
   * @returns the vector's series; a scalar result as one series without labels
   * @throws Error with Prometheus's error message when the query is invalid, or with the response when it is not JSON
   */
  query(promql: string): Promise<PromSample[]>;
  /**
   * Repeats {@link PrometheusServer.query} until `accept` returns true for its result.
   * @returns the accepted result
   * @throws Error holding the last result when `timeoutMs` (default 30 000) passes first
   */
  waitFor(promql: string, accept: (samples: PromSample[]) => boolean, timeoutMs?: number): Promise<PromSample[]>;
  /** A GET of its HTTP API (`/api/v1/targets`, `/api/v1/alerts`, …): the `data` of the answer. */
  api(path: string): Promise<unknown>;
  /** SIGTERM (SIGKILL after 5 s), then removes its temporary folder (configuration and data). */
  stop(): Promise<void>;
}

/**
 * Starts Debian's Prometheus (/usr/bin/prometheus) listening on 127.0.0.1 only, with a configuration
 * and a TSDB in a temporary folder: one scrape job per target job (`static_configs` with the target's
 * labels), plus `scrapeConfigs`, scraped and evaluated every `intervalSeconds`. Waits until
 * `/-/ready` answers 200.
 *
 * @throws Error naming deploy/prometheus/install.sh when the binary is missing; Error with the tail of
 *   its log when it exits or is not ready within 30 s (bad configuration, port taken)
 */
export async function startPrometheus(options: PrometheusOptions = {}): Promise<PrometheusServer> {
  requirePrometheus();
  const interval = `${options.intervalSeconds ?? 1}s`;
  const jobs = new Map<string, PrometheusTarget[]>();
  for (const target of options.targets ?? []) jobs.set(target.job, [...(jobs.get(target.job) ?? []), target]);
  const config = {
    global: { scrape_interval: interval, scrape_timeout: interval, evaluation_interval: interval },
    ...(options.ruleFiles?.length ? { rule_files: options.ruleFiles } : {}),
    scrape_configs: [
      ...[...jobs].map(([job, targets]) => {
        const paths = new Set(targets.map((t) => t.path ?? '/metrics'));
        if (paths.size > 1) throw new Error(`the targets of job ${job} have different paths: ${[...paths].join(', ')}`);
        return {
          job_name: job,
          metrics_path: [...paths][0],
          static_configs: targets.map((t) => ({ targets: [new URL(t.url).host], labels: t.labels ?? {} })),
        };
      }),
      ...(options.scrapeConfigs ?? []),
    ],
  };
  return inTemporaryDir('restash-prometheus-', async (dir) => {
    const configFile = join(dir, 'prometheus.yml');
    // JSON is YAML: Prometheus reads it as is.
    await writeFile(configFile, JSON.stringify(config, null, 2));
    const port = options.port ?? (await freePort());
    const running = await startProcess({
      name: 'prometheus',
      command: PROMETHEUS_BIN,
      args: [
        `--config.file=${configFile}`,
        `--storage.tsdb.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--storage.tsdb.retention.time=1h',
        '--log.level=warn',
      ],
      ...(options.logFile !== undefined ? { logFile: options.logFile } : {}),
      ready: () => answers200(port, '/-/ready'),
    });
    const url = `http://127.0.0.1:${port}`;
    const api = async (path: string): Promise<unknown> => {
      const response = await fetch(`${url}${path}`);
      const text = await response.text();
      let body: { status?: string; data?: unknown; error?: string };
      try {
        body = JSON.parse(text) as typeof body;
      } catch {
        throw new Error(`GET ${path}: ${response.status} ${text.slice(0, 500)}`);
      }
      if (body.status !== 'success') throw new Error(`GET ${path}: ${body.error ?? text.slice(0, 500)}`);
      return body.data;
    };
    const query = async (promql: string): Promise<PromSample[]> => {
      const data = (await api(`/api/v1/query?query=${encodeURIComponent(promql)}`)) as { resultType: string; result: unknown };
      if (data.resultType === 'scalar') return [{ metric: {}, value: Number((data.result as [number, string])[1]) }];
      if (data.resultType !== 'vector') throw new Error(`${promql}: a ${data.resultType} result, not a vector`);
      return (data.result as Array<{ metric: Record<string, string>; value: [number, string] }>).map((s) => ({ metric: s.metric, value: Number(s.value[1]) }));
    };
    return {
      url,
      config,
      query,
      api,
      waitFor: async (promql, accept, timeoutMs = 30_000) => {
        const deadline = Date.now() + timeoutMs;
        for (;;) {
          const samples = await query(promql);
          if (accept(samples)) return samples;
          if (Date.now() > deadline) throw new Error(`${promql} was not accepted within ${timeoutMs / 1000} s; last result: ${JSON.stringify(samples)}`);
          await new Promise((r) => setTimeout(r, 500));
        }
      },
      stop: () => running.stop(),
    };
  });
}

/**
 * `promtool <args>` with `input` on its standard input.
 * @returns its exit code and output (a non-zero exit does not throw: lint problems exit 1 or 3)
 * @throws Error naming deploy/prometheus/install.sh when promtool is missing
 */
export function promtool(args: string[], input = ''): Promise<{ code: number; stdout: string; stderr: string }> {
  requirePrometheus();
  return new Promise((resolve, reject) => {
    const child = execFile(PROMTOOL_BIN, args, { maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error && typeof error.code !== 'number') reject(error);
      else resolve({ code: typeof error?.code === 'number' ? error.code : 0, stdout, stderr });
    });
    child.stdin?.end(input);
  });
}

/**
 * `promtool check metrics` of an exposition (a `/metrics` body): Prometheus's naming and format lint.
 * @returns its problems, one a line (none when clean)
 */
export async function lintMetrics(exposition: string): Promise<string[]> {
  const { code, stdout, stderr } = await promtool(['check', 'metrics'], exposition);
  const problems = `${stdout}${stderr}`.split('\n').map((l) => l.trim()).filter(Boolean);
  return code === 0 ? problems : problems.length > 0 ? problems : [`promtool check metrics exited ${code}`];
}

/**
 * The series names an exposition declares (`# TYPE` lines), histograms and summaries with the suffixes
 * of their series (`_bucket`, `_sum`, `_count`), so that PromQL names can be looked up.
 */
export function exposedNames(exposition: string): Set<string> {
  const names = new Set<string>();
  for (const match of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name, type] = match as unknown as [string, string, string];
    names.add(name);
    if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(`${name}${suffix}`);
    if (type === 'summary') for (const suffix of ['_sum', '_count']) names.add(`${name}${suffix}`);
  }
  return names;
}

/**
 * The `restash_*` metric names a PromQL text (or a file of them) uses; a name's prefix in a regex
 * (`restash_(kv|vector)_…`) is not one.
 */
export function restashNamesIn(text: string): Set<string> {
  return new Set([...text.matchAll(/\brestash_[a-z0-9_]+/g)].map((m) => m[0]).filter((name) => !name.endsWith('_')));
}
