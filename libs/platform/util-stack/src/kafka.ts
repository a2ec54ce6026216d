import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Admin } from '@platformatic/kafka';
import { repoRoot } from './paths';
import { type Restartable, freePorts, installOnce, restartable, startProcess } from './process';

/** An Apache Kafka broker (deploy/kafka-local: KRaft, single combined node) started by the launcher. */
export interface KafkaBroker extends Restartable {
  /** The PLAINTEXT listener's port on 127.0.0.1. */
  port: number;
  /** `['127.0.0.1:<port>']`, for a client's broker list. */
  brokers: string[];
  /** The broker's data directory (server.properties, cluster-id, logs/). */
  dataDir: string;
}

/** How {@link startKafka} runs the broker. */
export interface KafkaBrokerOptions {
  /** The PLAINTEXT port; a free one by default. */
  port?: number;
  /** The KRaft controller's port; a free one by default. */
  controllerPort?: number;
  /** Data directory to use (kept on `stop()`); by default a fresh temporary directory (removed on `stop()`). */
  dataDir?: string;
  /** CPUs to pin the JVM to (`taskset -c`). */
  cpus?: string;
  /** A file for the broker's log; by default its tail is kept in memory. */
  logFile?: string;
}

/**
 * Starts deploy/kafka-local/start.sh (a Kafka broker + KRaft controller in one JVM,
 * `auto.create.topics.enable=false`, single-partition internal topics) on 127.0.0.1, and waits until
 * a Metadata request names the broker. The first call in a process runs
 * deploy/kafka-local/install.sh (Maven Central jars, cached under .cache/kafka). start.sh execs the
 * JVM: the pid is the broker's, and SIGTERM stops it cleanly (SIGKILL after 10 s).
 *
 * @throws Error when the install fails, or the broker exits or is not ready within 60 s (the message
 *   holds the tail of its log)
 */
export async function startKafka(options: KafkaBrokerOptions = {}): Promise<KafkaBroker> {
  await installOnce('deploy/kafka-local/install.sh');
  const [free, freeController] = await freePorts(2);
  const port = options.port ?? (free as number);
  const controllerPort = options.controllerPort ?? (freeController as number);
  const ownDir = options.dataDir === undefined;
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'restash-kafka-')));
  const brokers = [`127.0.0.1:${port}`];
  const script = join(repoRoot(), 'deploy/kafka-local/start.sh');
  const controls = await restartable(
    () =>
      startProcess({
        name: `kafka on port ${port}`,
        command: 'bash',
        args: [script, '--port', String(port), '--controller-port', String(controllerPort), '--data', dataDir],
        ...(options.cpus !== undefined ? { cpus: options.cpus } : {}),
        ...(options.logFile !== undefined ? { logFile: options.logFile } : {}),
        ready: () => brokerAnswers(brokers),
        readyTimeoutMs: 60_000,
        pollMs: 200,
        killAfterMs: 10_000,
      }),
    async () => {
      if (ownDir) await rm(dataDir, { recursive: true, force: true });
    },
  );
  return Object.assign(controls, { port, brokers, dataDir });
}

/** One Metadata request without retries (the client the gateway uses): does the broker know itself? `false` on any error. */
async function brokerAnswers(brokers: string[]): Promise<boolean> {
  const admin = new Admin({ clientId: 'restash-stack', bootstrapBrokers: brokers, retries: 0, timeout: 2_000 });
  try {
    const metadata = await admin.metadata({ topics: [], forceUpdate: true });
    return metadata.brokers.size > 0;
  } catch {
    return false;
  } finally {
    await admin.close().catch(() => undefined);
  }
}
