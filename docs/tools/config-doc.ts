// `make config-doc`: writes the environment tables of docs/configuration.md, one per app, from the app's zod schema
// (apps/<app>/src/config.ts) between the markers `<!-- config:<app>:start -->` and `<!-- config:<app>:end -->`; the
// text around them is hand-written. config-doc.spec.ts fails while the checked-in page differs from what this writes.
//
//   SWC_NODE_PROJECT=tsconfig.base.json node -r @swc-node/register docs/tools/config-doc.ts
//
// Names, order, defaults and whether a variable is required come from the schema. A description comes from the
// field's `.describe()` when it has one, else from DESCRIPTIONS below (the text of the README's tables, where these
// tables were written by hand); a variable with neither fails the generator, so a new variable needs one.
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { z } from 'zod';
import { type EnvDocOptions, envTable, envVariables, replaceSection } from '@restash/shared/util-config';
import { kvGatewayEnvSchema } from '../../apps/kv-gateway/src/config';
import { vectorGatewayEnvSchema } from '../../apps/vector-gateway/src/config';
import { streamGatewayEnvSchema } from '../../apps/stream-gateway/src/config';
import { queueGatewayEnvSchema } from '../../apps/queue-gateway/src/config';
import { queueWorkerEnvSchema } from '../../apps/queue-worker/src/config';
import { operatorEnvSchema } from '../../apps/operator/src/config';

/** docs/configuration.md. */
export const CONFIGURATION_PAGE = join(__dirname, '..', 'configuration.md');

const LIMITS = '[Architecture: limits](architecture.md#architecture-limits)';

/** What every service says the same way. */
const COMMON: Record<string, string> = {
  REGISTRY_SEAL_KEY:
    "the platform key that opens the registry's sealed secrets: 32 random bytes, base64 (`openssl rand -base64 32`), the same as the tenants command's and the operator's",
  MANAGEMENT_PORT: '`/healthz`, `/readyz`, `/metrics`',
  UNREAD_ANSWER_BYTES: `most bytes of one tenant's answers the gateway holds while its clients have not read them; past it 429 (${LIMITS})`,
  REGISTRY_CACHE_TTL_MS: 'longest use of a cached registry record (pub/sub drops it sooner)',
  LOG_LEVEL: '`fatal`, `error`, `warn`, `log`, `debug`, `verbose` (JSON lines)',
};

/** The queue storage variables, which queue-gateway, queue-worker and the operator read alike. */
const QUEUE_STORE: Record<string, string> = {
  QUEUE_REDIS_URL: "the queue's Redis: messages, lanes, schedules, DLQ, events (AOF, `noeviction`); queue-gateway and queue-worker must agree on it. Its server is named `main`; a queue-worker delivers the projects of the one server its QUEUE_REDIS_URL names",
  QUEUE_REDIS_SERVERS:
    'more queue Redis servers, space-separated `<name>=<url>` (names of lower-case letters, digits and `-`): new queue projects are spread over these and `main`, each record keeps its server, and each server needs a queue-worker of its own; queue-gateway, the operator and `tenants` must agree on it ([queue.md](queue.md#queue-several-queue-redis-servers))',
  QUEUE_PREFIX: 'prefix of every key written there',
  MESSAGE_RETENTION_MS: 'how long a delivered or failed message stays readable',
  DLQ_RETENTION_MS: 'how long a DLQ entry is kept',
  EVENTS_PER_PROJECT: 'events (logs) kept per project',
};

/** An HTTP gateway's own port and body cap. */
function gateway(api: string, resource: string): Record<string, string> {
  return {
    ...COMMON,
    HOST: 'address to bind',
    PORT: `the ${api}`,
    BODY_LIMIT_BYTES: `hard cap on any body (413); per-${resource} limits apply below it`,
  };
}

/** Each app's table: its section name in the page, its schema, and what the schema does not say. */
export const CONFIG_SECTIONS: ReadonlyArray<{ app: string; schema: z.ZodType; options: EnvDocOptions }> = [
  {
    app: 'kv-gateway',
    schema: kvGatewayEnvSchema,
    options: {
      descriptions: {
        ...gateway('KV REST API', 'database'),
        CONTROL_REDIS_URL: 'the control Redis: tenant registry and quotas, never tenant data',
        REDIS_POOL_SIZE: 'multiplexed connections per database',
        REDIS_TRANSACTION_POOL_SIZE: 'dedicated connections per database for `/multi-exec`',
        REDIS_COMMAND_TIMEOUT_MS: 'a command unanswered this long fails with 503 (0 = never); checked every tenth of it (at most every second), so it fails within 1.2 × this after it was sent',
        REDIS_SCRIPT_TIMEOUT_MS:
          'a script or function still running this long is killed (`SCRIPT KILL`, `FUNCTION KILL`; [KV: limits](kv.md#kv-limits)); must be below `REDIS_COMMAND_TIMEOUT_MS`',
        REDIS_IDLE_TIMEOUT_MS: 'idle transaction and ACL-user connections are closed',
        REPLICA_ACK_TIMEOUT_MS:
          'how long a write to a database with `durability: replicated` waits for a replica (`WAIT`) before it is answered 503 `NOREPLICAS` ([KV databases: durability](operations.md#kv-databases-durability)); must be below `REDIS_COMMAND_TIMEOUT_MS`',
        SSE_HEARTBEAT_MS: 'comment line on idle subscribe streams',
      },
    },
  },
  {
    app: 'vector-gateway',
    schema: vectorGatewayEnvSchema,
    options: {
      descriptions: {
        ...gateway('Vector REST API', 'index'),
        CONTROL_REDIS_URL: 'the control Redis: registry, quotas, namespace lists, resumable queries',
        QDRANT_TIMEOUT_MS: 'a Qdrant call unanswered this long fails with 503',
        EMBEDDER_TIMEOUT_MS: 'an embeddings call unanswered this long fails with 502',
        EMBEDDING_ALLOWLIST:
          "comma-separated IPs or CIDRs that an index's own `spec.embedding.url` may reach although they are not public (the SSRF guard of [Queue: SSRF guard](queue.md#queue-ssrf-guard)); the applier's `EMBEDDING_URL` is the platform's and needs none",
        FILTER_SCAN_LIMIT: 'most candidates one filtered query reads',
        SPARSE_VECTOR_CACHE_BYTES:
          "memory for the stored sparse vectors of recent sparse-query hits, which exact rescoring reuses instead of reading them from Qdrant again (keyed by the namespace's write version, so a write retires them; 60 s at most); 0: none",
      },
    },
  },
  {
    app: 'stream-gateway',
    schema: streamGatewayEnvSchema,
    options: {
      descriptions: {
        ...gateway('Stream REST API', 'cluster'),
        CONTROL_REDIS_URL: 'the control Redis: registry and quotas',
        KAFKA_REQUEST_TIMEOUT_MS: 'a broker request unanswered this long fails with 503',
        CONSUMER_IDLE_TIMEOUT_MS: 'a consumer instance with no request for this long is closed',
        CONSUMER_SESSION_TIMEOUT_MS: 'Kafka session and rebalance timeout of consumer instances',
        CONSUMER_MAX_WAIT_MS: "how long an idle instance's broker fetch waits for data",
        CONSUMER_MAX_BUFFERED_RECORDS: 'an instance stops fetching while this many records wait for its client',
        CONSUMER_MAX_BUFFERED_BYTES:
          'an instance stops fetching while its waiting records hold this many bytes (a consume answer is about this big at most, plus one record batch)',
        CONSUMER_JOIN_WAIT_MS: 'how long the request that creates an instance waits for its partitions',
        PEER_HOST:
          'the address other replicas reach this one at, to forward requests for the consumer instances it holds (the chart passes the pod IP); default: `HOST` unless a wildcard, else the first non-internal IPv4 address',
      },
      fallbacks: { PEER_HOST: '(derived)' },
    },
  },
  {
    app: 'queue-gateway',
    schema: queueGatewayEnvSchema,
    options: {
      descriptions: {
        ...gateway('queue API (QStash v2)', 'project'),
        ...QUEUE_STORE,
        CONTROL_REDIS_URL: 'the control Redis: tenant registry and quotas',
      },
    },
  },
  {
    app: 'queue-worker',
    schema: queueWorkerEnvSchema,
    options: {
      descriptions: {
        ...COMMON,
        ...QUEUE_STORE,
        CONTROL_REDIS_URL: 'the control Redis: registry (signing keys)',
        HOST: 'address of the management server',
        WORKER_CONCURRENCY: 'deliveries in flight at once',
        DELIVERY_TIMEOUT_MS: 'longest attempt when a message sets no `Upstash-Timeout`, and the most it may set',
        MAX_REDIRECTS: 'redirects followed per attempt, each hop checked by the SSRF guard',
        MAX_RESPONSE_BYTES: 'response bytes kept for callbacks and the DLQ',
        DESTINATION_ALLOWLIST: 'comma-separated IPs or CIDRs allowed although not public, e.g. `127.0.0.0/8,::1`',
        IN_NAMESPACE_DESTINATIONS:
          "on Kubernetes: watch pods and Services so that QueueProjects with `destinations.inNamespace` reach their own namespace's",
        PLATFORM_NAMESPACES: 'namespaces no project reaches that way (the chart passes the release namespace)',
        CALLBACK_RETRIES: 'retries of a callback that sets no `Upstash-Callback-Retries`',
        LOCK_DURATION_MS:
          'a delivery whose worker died comes back after about this plus `STALLED_INTERVAL_MS` (its lock is renewed every half of this while it runs)',
        STALLED_INTERVAL_MS: 'how often workers look for deliveries whose worker died',
        MAX_STALLED_COUNT: 'worker deaths a message survives before it fails',
      },
    },
  },
  {
    app: 'operator',
    schema: operatorEnvSchema,
    options: {
      descriptions: {
        ...COMMON,
        ...QUEUE_STORE,
        QUEUE_REDIS_URL: "the queue's Redis (server `main`), where new queue projects may be placed and deleted ones' messages are purged",
        CONTROL_REDIS_URL: 'the registry it writes, as the gateways read it',
        HOST: 'address of the management server',
        KV_GATEWAY_URL: "the KV gateway's URL, written into each KvDatabase's Secret",
        VECTOR_GATEWAY_URL: "the Vector gateway's URL, written into each VectorIndex's Secret",
        STREAM_GATEWAY_URL: "the Stream gateway's URL, written into each StreamCluster's Secret",
        QUEUE_GATEWAY_URL: "the queue gateway's URL, written into each QueueProject's Secret",
        QDRANT_URL: 'the Qdrant of every VectorIndex (not Ready without it)',
        QDRANT_API_KEY: "that Qdrant's API key",
        KAFKA_BROKERS: 'comma-separated `host:port` of the Kafka of every StreamCluster',
        EMBEDDING_URL: 'the default embeddings endpoint of `spec.embedding`',
        EMBEDDING_API_KEY: "that endpoint's API key",
        MANAGED_REDIS_IMAGE: 'the redis-server image of managed KV databases',
        MANAGED_VALKEY_IMAGE:
          'the valkey-server image of managed databases whose `engine` is `valkey` ([KV databases: Redis or Valkey](operations.md#kv-databases-redis-or-valkey)); without it they are refused (`NotSupported`); the chart sets `valkey/valkey:9.1.2`',
        MANAGED_REDIS_PULL_POLICY: 'its `imagePullPolicy` (`Never` on the test cluster)',
        MANAGED_REDIS_RUN_AS_USER: 'uid and gid of the server (0 only on storage that ignores `fsGroup`, e.g. hostPath)',
        MANAGED_REDIS_CPU_REQUEST: "the server's CPU request",
        MANAGED_REDIS_MEMORY_REQUEST: "the server's memory request",
        MANAGED_REDIS_MEMORY_LIMIT: "the server's memory limit",
        MANAGED_REDIS_INIT_IMAGE:
          "the image of the init containers: restore (`main.js restore`), replicated servers' and sentinels' configuration (`main.js redis-config`); without it `spec.restore` and replicas are refused (`NotSupported`); the chart sets the operator's own image",
        LEADER_ELECTION: 'one active replica, through the Lease `LEASE_NAMESPACE`/`LEASE_NAME`',
        LEASE_NAMESPACE: 'the namespace of the Lease',
        LEASE_NAME: 'the name of the Lease',
        POD_NAME: "this replica's identity in the Lease",
        RESYNC_SECONDS: 'every resource is reconciled at least this often',
        WORKERS: 'namespaces reconciled at once',
        BACKUP_WORKERS: 'KvBackups taken at once',
      },
      // The loader gives QUEUE_REDIS_URL the control Redis's URL; POD_NAME's default is the machine's host name.
      fallbacks: { QUEUE_REDIS_URL: '`CONTROL_REDIS_URL`', POD_NAME: 'the host name' },
    },
  },
];

/** docs/configuration.md as the generator writes it: `page` with every app's table replaced. */
export function configurationPage(page: string): string {
  return CONFIG_SECTIONS.reduce((text, { app, schema, options }) => replaceSection(text, `config:${app}`, envTable(envVariables(schema, options))), page);
}

if (require.main === module) {
  writeFileSync(CONFIGURATION_PAGE, configurationPage(readFileSync(CONFIGURATION_PAGE, 'utf8')));
  process.stdout.write('docs/configuration.md: environment tables written\n');
}
