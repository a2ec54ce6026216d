import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type AppProcess, startApp } from './app';
import { type KafkaBroker, startKafka } from './kafka';
import type { AppName } from './paths';
import { DATA_REDIS_PASSWORD_VARIABLE, type PortName, type StackPorts } from './ports';
import { type EmbedderLocal, type QdrantLocal, startEmbedderLocal, startQdrantLocal } from './python-services';
import { GATEWAY_REDIS_USER } from '@restash/kv/util-command';
import { type KvEngine, type KvEngineName, type RedisEngine, kvEngine } from './kv-engine';
import { QUEUE_REDIS_CONFIG, type RedisAuth, type RedisServer, kvServerOptions, startRedisServer } from './redis';
import { type TenantTokens, applyTenantFile, applyTenants, markRegistryComplete } from './tenants';

/** The services of the repository a stack can run (every app but the tenants command and the operator, which needs a cluster). */
export type ServiceName = Exclude<AppName, 'tenants-cli' | 'operator'>;

/** The engines a stack starts, for a tenants function to point its documents at. */
export interface StackEngines {
  control: RedisServer;
  /** The queue's own Redis, when asked for (`queueRedis: true`). */
  queueRedis?: RedisServer;
  /** More queue Redis servers (QUEUE_REDIS_SERVERS), by name, when asked for (`queueServers`). */
  queueServers: Map<string, RedisServer>;
  /** One Redis server per KV database, by its id. */
  kvRedis: Map<string, RedisServer>;
  /** The engine of the KV databases' servers. */
  kvEngine: KvEngine;
  /** The gateway's ACL user on every KV database's server. */
  dataRedisAuth: RedisAuth;
  qdrant?: QdrantLocal;
  embedder?: EmbedderLocal;
  kafka?: KafkaBroker;
}

/** A KV database's own Redis server. */
export interface KvDatabaseServer {
  /** Its name in the stack (directory, log, process), e.g. `demo.main`. */
  id: string;
  /** The port (a free one by default). */
  port?: number;
  /** The variable that gives a tenants file its port, e.g. RESTASH_DATA_REDIS_PORT. */
  variable?: string;
}

/** What {@link startStack} starts, and how. */
export interface StackOptions {
  /**
   * The stack's folder (made 0700): redis.conf and data of each engine, `logs/<process>.log`,
   * `secrets/<tenant>.json` (tokens), `run/<process>.pid`. Processes a pid file there names that still
   * run (an earlier launcher that was killed) are stopped first. By default a fresh temporary folder,
   * removed on stop.
   */
  stateDir?: string;
  /**
   * Durable engines (`make dev`): AOF on the control Redis (which then also holds the queue's jobs:
   * `noeviction`) and on every KV database's server; the data Redis password is kept in
   * `stateDir/data-redis.password` and the registry seal key in `stateDir/registry-seal.key`, and reused.
   */
  persistent?: boolean;
  /** `dist`: the built apps and tenants command (`make build`); `source`: the TypeScript sources, no build. */
  from: 'dist' | 'source';
  /** Fixed ports (DEV_PORTS, ports.ts); free ports of 127.0.0.1 for the rest. */
  ports?: Partial<StackPorts>;
  /** One Redis server per KV database, with the gateway's ACL user. */
  kvDatabases?: KvDatabaseServer[];
  /** The engine of the KV databases' servers (kv-engine.ts); by default the one `KV_ENGINE` names (`redis` when unset). */
  kvEngine?: KvEngineName;
  /** The gateway's password on the KV databases' servers; random by default. */
  dataRedisPassword?: string;
  /** REGISTRY_SEAL_KEY of the tenants command and every service (32 bytes, base64); random by default. */
  registrySealKey?: string;
  /** A Redis of its own for the queue (AOF every second, noeviction); by default the queue uses the control Redis. */
  queueRedis?: boolean;
  /** The server of the queue's Redis servers (kv-engine.ts): `system` (Debian's redis-server, the default), `redis` (8.2) or `valkey`. */
  queueEngine?: RedisEngine;
  /**
   * The names of more queue Redis servers (docs/queue.md, "Queue: several queue Redis servers"), each a Redis of its
   * own like `queueRedis`'s: the tenants command and queue-gateway get them as QUEUE_REDIS_SERVERS, and a stack
   * that runs queue-worker runs one more per server, `queue-worker-<name>` (appEnv's `queue-worker` settings).
   */
  queueServers?: string[];
  qdrant?: boolean;
  embedder?: boolean;
  kafka?: boolean;
  /**
   * The tenants, applied with the tenants command once the engines run: a resources file (its
   * `${VARIABLE}`s and engines: {@link Stack.tenantEnv}), or a function of the engines returning
   * Tenant documents (written as a resources file: resourceFileOf).
   */
  tenants?: string | ((engines: StackEngines) => Array<{ metadata: { name: string } }>);
  /**
   * Another process writes the registry and its marker (the operator of `make dev-k8s`): without `tenants` the stack
   * then leaves the marker to it, and its gateways answer every token 503 until it is written.
   */
  registryApplier?: boolean;
  /** The services to start once the tenants are applied. */
  apps?: ServiceName[];
  /** More environment per service (LOG_LEVEL, WORKER_CONCURRENCY, ...). */
  appEnv?: Partial<Record<ServiceName, NodeJS.ProcessEnv>>;
  /**
   * CPUs per process (`taskset -c`), by process name: `control-redis`, `queue-redis`, `kv-redis`
   * (every KV database's server), `qdrant-local`, `embedder-local`, `kafka`, or a service's name.
   */
  cpus?: Partial<Record<string, string>>;
}

/** One process of a stack. */
export interface StackProcess {
  name: string;
  readonly pid: number;
  exited(): Promise<string>;
  stop(): Promise<void>;
}

/** A running stack. */
export interface Stack extends StackEngines {
  stateDir: string;
  /** The ports in use: the engines' and the services'. */
  ports: Partial<StackPorts>;
  /** The services, by name. */
  apps: Partial<Record<ServiceName, AppProcess>>;
  /** The queue-worker of each of `queueServers` (the main server's is `apps['queue-worker']`), by server name. */
  queueWorkers: Map<string, AppProcess>;
  /**
   * The tenants command's variables: RESTASH_DATA_REDIS_PASSWORD and each KV database's port variable for
   * the file's `${NAME}`s, and the engines it puts resources on (QDRANT_URL, EMBEDDING_URL, KAFKA_BROKERS).
   */
  tenantEnv: Record<string, string>;
  /** The platform key the registry's secrets are sealed with (REGISTRY_SEAL_KEY, given to the tenants command and every service). */
  registrySealKey: string;
  /** Where the tenants command keeps the tokens (`<dir>/<tenant>.json`). */
  secretsDir: string;
  /** What the tenants command printed. */
  applied: string;
  /**
   * Applies the stack's tenants again, with the same tokens (and marks the registry complete): what its applier does
   * after the control Redis lost its data. @returns the tenants command's output
   */
  applyAgain(): Promise<string>;
  /**
   * A tenant's tokens, as the tenants command wrote them.
   * @throws Error when the tenant was not applied
   */
  tokens(tenant: string): TenantTokens;
  /** Every process, engines first. */
  processes(): StackProcess[];
  /** Resolves with the name and status of the first process that exits before {@link Stack.stop}. */
  firstExit(): Promise<{ name: string; status: string }>;
  /** Stops the services, then the engines (SIGTERM, SIGKILL after their grace time); removes a temporary `stateDir`. */
  stop(): Promise<void>;
}

/** The ports of each service: API, management. */
const SERVICE_PORTS: Record<ServiceName, [PortName | undefined, PortName]> = {
  'kv-gateway': ['kv', 'kvManagement'],
  'vector-gateway': ['vector', 'vectorManagement'],
  'stream-gateway': ['stream', 'streamManagement'],
  'queue-gateway': ['queue', 'queueManagement'],
  'queue-worker': [undefined, 'queueWorkerManagement'],
};

/**
 * Starts a local stack on 127.0.0.1: the control Redis (the registry), a Redis per KV database with
 * the gateway's ACL user (Redis 8.2 with RedisJSON and RediSearch, or Valkey 9.1: `kvEngine`), the queue's Redis, qdrant-local, embedder-local and a Kafka broker as asked;
 * applies the tenants with the tenants command (apps/tenants-cli); then the services, each waited for
 * until its /readyz answers. queue-worker may deliver to loopback destinations (DESTINATION_ALLOWLIST
 * 127.0.0.0/8,::1): a local stack's sinks are on this machine.
 *
 * @throws Error naming the allowed engines when `KV_ENGINE` names another, before anything starts;
 *   Error naming the process that did not come up (with the tail of its log), or the tenants
 *   command's output; whatever was started is stopped first
 */
export async function startStack(options: StackOptions): Promise<Stack> {
  const engine = options.kvEngine ? kvEngine({ KV_ENGINE: options.kvEngine }) : kvEngine();
  const temporary = options.stateDir === undefined;
  const stateDir = options.stateDir ?? (await mkdtemp(join(tmpdir(), 'restash-stack-')));
  for (const dir of ['', 'logs', 'run']) await mkdir(join(stateDir, dir), { recursive: true, mode: 0o700 });
  await chmod(stateDir, 0o700);
  await stopLeftovers(join(stateDir, 'run'));

  const processes: StackProcess[] = [];
  const stopAll = async () => {
    for (const group of [processes.filter((p) => !isEngine(p.name)), processes.filter((p) => isEngine(p.name))]) {
      await Promise.all(group.map((p) => p.stop().catch(() => undefined)));
    }
    await rm(join(stateDir, 'run'), { recursive: true, force: true });
    if (temporary) await rm(stateDir, { recursive: true, force: true });
  };
  const track = async <T extends StackProcess>(name: string, started: Promise<Omit<T, 'name'>>): Promise<T> => {
    const service = Object.assign(await started, { name }) as T;
    processes.push(service);
    await writeFile(join(stateDir, 'run', `${name}.pid`), pidFileText(service.pid));
    return service;
  };
  const log = (name: string) => join(stateDir, 'logs', `${name}.log`);
  const pin = (name: string) => (options.cpus?.[name] !== undefined ? { cpus: options.cpus[name] as string } : {});
  const port = (name: PortName) => (options.ports?.[name] !== undefined ? { port: options.ports[name] as number } : {});

  try {
    const password = options.dataRedisPassword ?? (await keptSecret(join(stateDir, 'data-redis.password'), options.persistent ?? false, () => randomBytes(24).toString('hex')));
    const registrySealKey =
      options.registrySealKey ?? (await keptSecret(join(stateDir, 'registry-seal.key'), options.persistent ?? false, () => randomBytes(32).toString('base64')));
    const dataRedisAuth = { username: GATEWAY_REDIS_USER, password };
    const persistent = options.persistent ? ['appendonly yes'] : [];
    const kvServer = kvServerOptions(password);
    const redis = (name: string, dir: string, extra: { port?: number; config?: string[]; auth?: RedisAuth; engine?: RedisEngine; addressSpaceBytes?: number }, cpuKey = name) =>
      track<RedisServer & StackProcess>(name, startRedisServer({ name, dir: join(stateDir, dir), logFile: log(name), ...pin(cpuKey), ...extra }));

    const kvDatabases = options.kvDatabases ?? [];
    const queueEngine = options.queueEngine ? { engine: options.queueEngine } : {};
    const started = await settleAll({
      control: redis('control-redis', 'control', { ...port('controlRedis'), config: options.persistent ? QUEUE_REDIS_CONFIG : [] }),
      queueRedis: options.queueRedis ? redis('queue-redis', 'queue', { config: QUEUE_REDIS_CONFIG, ...queueEngine }) : undefined,
      queueServers: Promise.all((options.queueServers ?? []).map((name) => redis(`queue-redis-${name}`, `queue-${name}`, { config: QUEUE_REDIS_CONFIG, ...queueEngine }, 'queue-redis'))),
      kv: Promise.all(
        kvDatabases.map((db) =>
          // Valkey cannot read Redis 8's files (RDB format 12): a kept stateDir has a data folder per engine.
          redis(`kv-redis-${db.id}`, join(engine.name === 'redis' ? 'kv' : `kv-${engine.name}`, db.id), { ...(db.port ? { port: db.port } : {}), addressSpaceBytes: kvServer.addressSpaceBytes, config: [...persistent, ...kvServer.config], auth: dataRedisAuth, engine: engine.name }, 'kv-redis'),
        ),
      ),
      qdrant: options.qdrant
        ? track<QdrantLocal & StackProcess>('qdrant-local', startQdrantLocal({ dataDir: join(stateDir, 'qdrant'), logFile: log('qdrant-local'), ...pin('qdrant-local'), ...port('qdrant') }))
        : undefined,
      embedder: options.embedder
        ? track<EmbedderLocal & StackProcess>('embedder-local', startEmbedderLocal({ logFile: log('embedder-local'), ...pin('embedder-local'), ...port('embedder') }))
        : undefined,
      kafka: options.kafka
        ? track<KafkaBroker & StackProcess>(
            'kafka',
            startKafka({
              dataDir: join(stateDir, 'kafka'),
              logFile: log('kafka'),
              ...pin('kafka'),
              ...port('kafka'),
              ...(options.ports?.kafkaController ? { controllerPort: options.ports.kafkaController } : {}),
            }),
          )
        : undefined,
    });
    const kvRedis = new Map(kvDatabases.map((db, i) => [db.id, started.kv[i] as RedisServer]));
    const engines: StackEngines = {
      control: started.control,
      kvRedis,
      kvEngine: engine,
      dataRedisAuth,
      queueServers: new Map((options.queueServers ?? []).map((name, i) => [name, started.queueServers[i] as RedisServer])),
      ...(started.queueRedis ? { queueRedis: started.queueRedis } : {}),
      ...(started.qdrant ? { qdrant: started.qdrant } : {}),
      ...(started.embedder ? { embedder: started.embedder } : {}),
      ...(started.kafka ? { kafka: started.kafka } : {}),
    };
    const ports: Partial<StackPorts> = { controlRedis: engines.control.port };
    if (engines.qdrant) ports.qdrant = engines.qdrant.port;
    if (engines.embedder) ports.embedder = engines.embedder.port;
    if (engines.kafka) ports.kafka = engines.kafka.port;
    const tenantEnv: Record<string, string> = { [DATA_REDIS_PASSWORD_VARIABLE]: password };
    // The engines of a resources file's vector indexes and stream clusters (apps/tenants-cli reads them).
    if (engines.qdrant) tenantEnv.QDRANT_URL = engines.qdrant.url;
    if (engines.embedder) tenantEnv.EMBEDDING_URL = engines.embedder.url;
    if (engines.kafka) tenantEnv.KAFKA_BROKERS = engines.kafka.brokers.join(',');
    for (const db of kvDatabases) if (db.variable) tenantEnv[db.variable] = String(kvRedis.get(db.id)?.port);

    const controlRedisUrl = engines.control.url;
    const queueRedisUrl = (engines.queueRedis ?? engines.control).url;
    const secretsDir = join(stateDir, 'secrets');
    const queueRedisServers = [...engines.queueServers].map(([name, server]) => `${name}=${server.url}`).join(' ');
    const queueEnv = { QUEUE_REDIS_URL: queueRedisUrl, ...(queueRedisServers ? { QUEUE_REDIS_SERVERS: queueRedisServers } : {}) };
    const apply = { controlRedisUrl, from: options.from, env: { ...tenantEnv, ...queueEnv, REGISTRY_SEAL_KEY: registrySealKey } };
    let applied = '';
    let tenantsFile: string | undefined;
    if (typeof options.tenants === 'string') applied = await applyTenantFile((tenantsFile = options.tenants), { ...apply, secretsDir });
    else if (options.tenants) {
      applied = (await applyTenants(options.tenants(engines), stateDir, apply)).output;
      tenantsFile = join(stateDir, 'tenants.yaml');
    }
    // Without tenants the launcher is the applier (of none): an empty registry is complete, unknown tokens are 401.
    const applyAgain = async (): Promise<string> => {
      if (tenantsFile) return applyTenantFile(tenantsFile, { ...apply, secretsDir });
      return options.registryApplier ? '' : markRegistryComplete(stateDir, { ...apply, secretsDir });
    };
    if (!tenantsFile) await applyAgain();

    const apps: Partial<Record<ServiceName, AppProcess>> = {};
    const queueWorkers = new Map<string, AppProcess>();
    // Each queue server but the main one has a queue-worker of its own (QUEUE_REDIS_URL: that server).
    const extraWorkers = options.apps?.includes('queue-worker') ? [...engines.queueServers] : [];
    await settleAll(
      Object.fromEntries([
        ...(options.apps ?? []).map((app) => {
          const [api, management] = SERVICE_PORTS[app];
          const env: NodeJS.ProcessEnv = {
            CONTROL_REDIS_URL: controlRedisUrl,
            REGISTRY_SEAL_KEY: registrySealKey,
            ...(app === 'queue-gateway' ? queueEnv : app === 'queue-worker' ? { QUEUE_REDIS_URL: queueRedisUrl } : {}),
            ...(app === 'queue-worker' ? { DESTINATION_ALLOWLIST: '127.0.0.0/8,::1' } : {}),
            ...options.appEnv?.[app],
          };
          const fixed = {
            ...(api && options.ports?.[api] !== undefined ? { port: options.ports[api] } : {}),
            ...(options.ports?.[management] !== undefined ? { managementPort: options.ports[management] } : {}),
          };
          const running = track<AppProcess & StackProcess>(app, startApp(app, { from: options.from, env, logFile: log(app), ...pin(app), ...fixed })).then((p) => {
            apps[app] = p;
            if (api) ports[api] = Number(new URL(p.url).port);
            ports[management] = Number(new URL(p.managementUrl).port);
          });
          return [app, running] as const;
        }),
        ...extraWorkers.map(([name, server]) => {
          const process = `queue-worker-${name}`;
          const env = { CONTROL_REDIS_URL: controlRedisUrl, REGISTRY_SEAL_KEY: registrySealKey, QUEUE_REDIS_URL: server.url, DESTINATION_ALLOWLIST: '127.0.0.0/8,::1', ...options.appEnv?.['queue-worker'] };
          const running = track<AppProcess & StackProcess>(process, startApp('queue-worker', { from: options.from, env, logFile: log(process), ...pin('queue-worker') })).then((p) => {
            queueWorkers.set(name, p);
          });
          return [process, running] as const;
        }),
      ]),
    );

    let stopping = false;
    return {
      ...engines,
      stateDir,
      ports,
      apps,
      queueWorkers,
      tenantEnv,
      registrySealKey,
      secretsDir,
      applied,
      applyAgain,
      tokens: (tenant) => {
        try {
          return JSON.parse(readFileSync(join(secretsDir, `${tenant}.json`), 'utf8')) as TenantTokens;
        } catch (error) {
          throw new Error(`no tokens of tenant ${tenant} in ${secretsDir}: ${String(error)}`);
        }
      },
      processes: () => [...processes],
      firstExit: () =>
        Promise.race(
          processes.map(async (p) => {
            const status = await p.exited();
            return stopping ? new Promise<never>(() => undefined) : { name: p.name, status };
          }),
        ),
      stop: async () => {
        stopping = true;
        await stopAll();
      },
    };
  } catch (error) {
    await stopAll();
    throw error;
  }
}

const ENGINES = ['control-redis', 'queue-redis', 'kv-redis-', 'qdrant-local', 'embedder-local', 'kafka'];
const isEngine = (name: string) => ENGINES.some((prefix) => name.startsWith(prefix));

/** Awaits every promise of `work` (also after one failed, so that each started process is tracked), then throws the first error. */
async function settleAll<T extends Record<string, Promise<unknown> | undefined>>(work: T): Promise<{ [K in keyof T]: Awaited<T[K]> }> {
  const keys = Object.keys(work);
  const results = await Promise.allSettled(keys.map((key) => work[key]));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  return Object.fromEntries(keys.map((key, i) => [key, (results[i] as PromiseFulfilledResult<unknown>).value])) as { [K in keyof T]: Awaited<T[K]> };
}

/** A stack secret (the data Redis password, the registry seal key): new from `make`, or (persistent stacks) the one in `file`, made once. */
async function keptSecret(file: string, persistent: boolean, make: () => string): Promise<string> {
  if (persistent) {
    const kept = await readFile(file, 'utf8').catch(() => '');
    if (kept.trim()) return kept.trim();
  }
  const secret = make();
  if (persistent) await writeFile(file, `${secret}\n`, { mode: 0o600 });
  return secret;
}

/** A pid file: the pid and the process's start time (field 22 of /proc/<pid>/stat), so that a reused pid is not mistaken for it. */
function pidFileText(pid: number): string {
  return `${pid} ${startTime(pid) ?? ''}\n`;
}

function startTime(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/** Stops (SIGTERM, SIGKILL after 10 s) the processes of `runDir`'s pid files that still run, and removes the files. */
async function stopLeftovers(runDir: string): Promise<void> {
  const files = (await readdir(runDir)).filter((f) => f.endsWith('.pid'));
  await Promise.all(
    files.map(async (file) => {
      const [pidText, started] = (await readFile(join(runDir, file), 'utf8')).trim().split(' ');
      const pid = Number(pidText);
      if (Number.isInteger(pid) && pid > 0 && started && startTime(pid) === started) {
        process.kill(pid, 'SIGTERM');
        const deadline = Date.now() + 10_000;
        while (startTime(pid) === started && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
        if (startTime(pid) === started) process.kill(pid, 'SIGKILL');
      }
      await rm(join(runDir, file), { force: true });
    }),
  );
}
