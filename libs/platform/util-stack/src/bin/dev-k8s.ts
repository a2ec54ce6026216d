// `make dev-k8s`: the test cluster, the local stack's engines and gateways, and the operator, in the foreground.
//
//   node -r @swc-node/register libs/platform/util-stack/src/bin/dev-k8s.ts
//
// Starts deploy/k8s/cluster.sh (root only; `up` builds what is missing, about 25 minutes the first time)
// and, beside it, the engines and services of `make dev` on the same ports (DEV_PORTS) but with no tenants
// file: the tenants are the cluster's resources. Applies the CRDs of deploy/crds/, starts the operator
// (dist/apps/operator/main.js) against the cluster, the control Redis, Qdrant and Kafka, and copies the
// admin kubeconfig to .restash/kubeconfig, so that
//   kubectl --kubeconfig .restash/kubeconfig apply -f deploy/examples/
// gives resources whose Secrets configure the Upstash SDKs against the gateways. Ctrl-C or SIGTERM stops
// the operator, the stack and the cluster (`cluster.sh down`: nothing stays on the host). The stack's state
// (.restash/dev-k8s/, logs included) starts empty each time, as the cluster does.
import { existsSync } from 'node:fs';
import { copyFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { type Cluster, startCluster } from '../k8s';
import { repoRoot } from '../paths';
import { type AppProcess, startApp } from '../app';
import { devPorts } from '../ports';
import { type Stack, startStack } from '../stack';

const say = (text: string) => process.stdout.write(`${text}\n`);

/** The operator's management port (/healthz, /readyz, /metrics), moved by RESTASH_OPERATOR_MANAGEMENT_PORT. */
const OPERATOR_MANAGEMENT_PORT = Number(process.env.RESTASH_OPERATOR_MANAGEMENT_PORT ?? 9085);

const root = repoRoot();
const state = join(root, '.restash/dev-k8s');
const kubeconfigCopy = join(root, '.restash/kubeconfig');
let cluster: Cluster | undefined;
let stack: Stack | undefined;
let operator: AppProcess | undefined;
let stopping: Promise<void> | undefined;

/** Stops what started (the operator, the stack, then the cluster) and exits with `code`. */
function stop(code: number): Promise<void> {
  stopping ??= (async () => {
    say('\nstopping the operator, the local stack and the cluster');
    await operator?.stop().catch(() => undefined);
    await stack?.stop().catch(() => undefined);
    await rm(kubeconfigCopy, { force: true });
    await cluster?.stop().catch((error: unknown) => process.stderr.write(`${String(error)}\n`));
    process.exit(code);
  })();
  return stopping;
}

async function main(): Promise<void> {
  const ports = devPorts();
  await rm(state, { recursive: true, force: true });
  process.on('SIGINT', () => void stop(0));
  process.on('SIGTERM', () => void stop(0));

  say('starting the cluster (deploy/k8s/cluster.sh up) and the local stack (logs in .restash/dev-k8s/logs/)');
  const [clusterUp, stackUp] = await Promise.allSettled([
    startCluster({ output: 'inherit' }).then((c) => (cluster = c)),
    startStack({
      stateDir: state,
      from: 'dist',
      registryApplier: true, // the operator
      ports,
      qdrant: true,
      embedder: true,
      kafka: true,
      apps: ['kv-gateway', 'vector-gateway', 'stream-gateway', 'queue-gateway', 'queue-worker'],
    }).then((s) => (stack = s)),
  ]);
  for (const result of [clusterUp, stackUp]) if (result.status === 'rejected') throw result.reason;
  const k = cluster as Cluster;
  const s = stack as Stack;
  await copyFile(k.kubeconfig, kubeconfigCopy);

  const crds = join(root, 'deploy/crds');
  if (existsSync(crds)) {
    await k.kubectl(['apply', '-f', crds]);
    await k.kubectl(['wait', '--for=condition=Established', '-f', crds, '--timeout=60s']);
    say('CRDs of deploy/crds/ applied');
  } else {
    say('deploy/crds/ is missing: no CRDs applied (make crds writes them)');
  }

  const url = (port: number | undefined) => `http://127.0.0.1:${port}`;
  const redisImage = k.env.RESTASH_REDIS_IMAGE ?? '';
  operator = await startApp('operator', {
    from: 'dist',
    managementPort: OPERATOR_MANAGEMENT_PORT,
    logFile: join(state, 'logs/operator.log'),
    env: {
      KUBECONFIG: k.kubeconfig,
      CONTROL_REDIS_URL: s.control.url,
      QUEUE_REDIS_URL: (s.queueRedis ?? s.control).url,
      REGISTRY_SEAL_KEY: s.registrySealKey,
      QDRANT_URL: url(s.ports.qdrant),
      KAFKA_BROKERS: `127.0.0.1:${s.ports.kafka}`,
      EMBEDDING_URL: `${url(s.ports.embedder)}/v1`,
      KV_GATEWAY_URL: url(s.ports.kv),
      VECTOR_GATEWAY_URL: url(s.ports.vector),
      STREAM_GATEWAY_URL: url(s.ports.stream),
      QUEUE_GATEWAY_URL: url(s.ports.queue),
      MANAGED_REDIS_IMAGE: redisImage,
      MANAGED_REDIS_PULL_POLICY: 'Never',
      // The test cluster's host-path volumes ignore fsGroup: the server runs as root (without capabilities).
      MANAGED_REDIS_RUN_AS_USER: '0',
    },
  });

  say(`
restash on the test cluster is up (stack logs in .restash/dev-k8s/logs/, cluster logs in ${k.stateDir}/logs/)
  kubectl --kubeconfig .restash/kubeconfig apply -f deploy/examples/
  kubectl --kubeconfig .restash/kubeconfig get restash -A        (every restash resource, Ready and Reason)
  kubectl (${k.env.RESTASH_K8S_BIN}/kubectl) and helm of the cluster's version: source ${k.stateDir}/env
  Gateways: KV ${url(s.ports.kv)}, Vector ${url(s.ports.vector)}, Stream ${url(s.ports.stream)}, Queue ${url(s.ports.queue)}
  Operator: metrics on :${OPERATOR_MANAGEMENT_PORT}/metrics; managed Redis image ${redisImage}

Ctrl-C stops everything and removes the cluster from the host.`);

  const exits = [s.firstExit(), operator.exited().then((status) => ({ name: 'operator', status }))];
  const exit = await Promise.race(exits);
  if (stopping) return;
  process.stderr.write(`${exit.name} stopped (${exit.status}); see its log\n`);
  await stop(1);
}

/** A failed start stops whatever did start, as Ctrl-C does. */
main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  void stop(1);
});
