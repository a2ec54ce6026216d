import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { installOnce, repoRoot, restartable, startProcess } from './python-services';
import { freePort } from './redis-server';

/** A real Apache Kafka broker (deploy/kafka-local: 4.3.1, KRaft, single combined node) started for a test. */
export interface KafkaBroker {
  /** The PLAINTEXT listener's port on 127.0.0.1. */
  port: number;
  /** `['127.0.0.1:<port>']`, for `new Kafka({ brokers })`. */
  brokers: string[];
  /** The broker's data directory (server.properties, cluster-id, logs/). */
  dataDir: string;
  /** Stops the broker (SIGTERM, SIGKILL after 10 s) and removes `dataDir` if this helper created it. */
  stop(): Promise<void>;
  /** Kills the broker (SIGKILL) and keeps `dataDir`, for crash and outage tests. */
  kill(): Promise<void>;
  /** Stops the broker (SIGTERM) if running and starts it again on the same ports and `dataDir`. */
  restart(): Promise<void>;
}

export interface KafkaBrokerOptions {
  /** Data directory to use (kept on `stop()`); by default a fresh temporary directory (removed on `stop()`). */
  dataDir?: string;
}

const READY_TIMEOUT_MS = 60_000;
const POLL_MS = 200;
const KILL_AFTER_MS = 10_000;

/**
 * Starts deploy/kafka-local/start.sh (a Kafka 4.3.1 broker + KRaft controller, `auto.create.topics.enable=false`,
 * single-partition internal topics) on two free ports of 127.0.0.1, and waits until a kafkajs admin
 * client connects and `describeCluster()` succeeds. The first call in a process runs
 * deploy/kafka-local/install.sh (Maven Central jars, cached under .cache/kafka).
 *
 * @throws Error when the install fails, or the broker exits or is not ready within 60 s (the message
 *   holds the tail of its log)
 */
export async function startKafka(options: KafkaBrokerOptions = {}): Promise<KafkaBroker> {
  await installOnce('deploy/kafka-local/install.sh');
  const port = await freePort();
  let controllerPort = await freePort();
  while (controllerPort === port) controllerPort = await freePort();
  const ownDir = options.dataDir === undefined;
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'restash-kafka-')));
  const brokers = [`127.0.0.1:${port}`];
  const script = join(repoRoot(), 'deploy/kafka-local/start.sh');
  const spec = {
    name: 'kafka',
    command: 'bash',
    args: [script, '--port', String(port), '--controller-port', String(controllerPort), '--data', dataDir],
    port,
    ready: () => brokerAnswers(brokers),
    readyTimeoutMs: READY_TIMEOUT_MS,
    pollMs: POLL_MS,
    killAfterMs: KILL_AFTER_MS,
  };
  const controls = await restartable(() => startProcess(spec), dataDir, ownDir);
  return { port, brokers, dataDir, ...controls };
}

/** One admin connect + DescribeCluster without retries; `false` on any error. */
async function brokerAnswers(brokers: string[]): Promise<boolean> {
  const admin = new Kafka({ brokers, logLevel: logLevel.NOTHING, connectionTimeout: 1_000, requestTimeout: 2_000, retry: { retries: 0 } }).admin();
  try {
    await admin.connect();
    await admin.describeCluster();
    return true;
  } catch {
    return false;
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
}
