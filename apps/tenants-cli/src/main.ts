import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { z } from 'zod';
import { loadConfig } from '@restash/shared/util-config';
import { QueueServerPool, queueServersConfig, queueServersEnv, queueStoreConfig, queueStoreEnv } from '@restash/queue/data-access-store';
import { TenantTeardown, enginePurgers, formatFailures } from '@restash/platform/feature-teardown';
import { RegistryWriter, RuntimeStore, queueProjectId, registrySealFromEnv } from '@restash/shared/data-access-registry';
import { openRedis } from '@restash/shared/data-access-redis';
import { type SigningKeys, ensureTenantTokens, removeTenantTokens } from './secrets';
import { readTenants } from './tenant-file';

const USAGE = `usage:
  tenants apply -f FILE [--secrets-dir DIR]        write the tenants of FILE into the registry
  tenants delete NAMESPACE... [--secrets-dir DIR]  delete tenants and everything they own

FILE holds KvDatabase, VectorIndex, StreamCluster and QueueProject resources (restash.dev/v1alpha1)
and the Secrets they refer to; each namespace is a tenant, and apply sets it to exactly the file's
resources in that namespace. \${NAME} in the file is the environment variable NAME. The shared
engines come from the environment: QDRANT_URL and QDRANT_API_KEY (vector indexes), KAFKA_BROKERS
(comma-separated host:port, stream clusters), EMBEDDING_URL and EMBEDDING_API_KEY (the default
embedding endpoint). A resource that cannot be applied (a missing Secret key, a managed KV database,
a missing engine) fails the command before anything is written.

The registry is the control Redis named by CONTROL_REDIS_URL. Plain tokens are written to
DIR/<tenant>.json (default .restash/secrets) and reused on the next apply; delete removes them.
A queue project already in the registry keeps the registry's signing keys (POST /v2/keys/rotate
changes them there): apply writes them to DIR/<tenant>.json and says so when they were rotated.
After the file's tenants, apply marks the registry complete: until then (a control Redis restarted
empty or wiped) the gateways answer every token 503, never 401. Apply the file of every tenant then.

Deleting a tenant (or dropping a resource from its spec on apply) also deletes its data: KV
databases' Redis contents, vector indexes' Qdrant collections, stream clusters' Kafka topics and
consumer groups (at the addresses in the registry), queue projects' messages, DLQ and events, and
quota counters. The queue's Redis is QUEUE_REDIS_URL (default: CONTROL_REDIS_URL), server 'main',
plus the servers of QUEUE_REDIS_SERVERS ('<name>=<url> …'), with keys under QUEUE_PREFIX (default
restash:queue), as queue-gateway and queue-worker use them; apply places each new queue project on
one of them. When some data
cannot be deleted, the command names it and exits with 1; run it again to finish. Until then the
tenant cannot be applied again.`;

/**
 * The local applier (docs/architecture.md, "Architecture: tenant registry"): writes tenants, their KV databases,
 * vector indexes, stream clusters, queue projects and token digests into the registry, as the operator
 * does in a cluster, and deletes tenants with their data (libs/platform/feature-teardown).
 */
async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      file: { type: 'string', short: 'f' },
      'secrets-dir': { type: 'string', default: '.restash/secrets' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  const [verb, ...names] = positionals;
  const url = process.env.CONTROL_REDIS_URL;
  if (values.help || !verb) return usage(values.help ? 0 : 2);
  if (!url) {
    console.error('CONTROL_REDIS_URL is not set');
    return 2;
  }
  const secretsDir = values['secrets-dir'];
  if (verb === 'apply' && values.file) {
    const tenants = readTenants(await readFile(values.file, 'utf8'), process.env);
    return withTeardown(url, async (teardown, writer, runtime) => {
      let code = 0;
      for (const tenant of tenants) {
        const name = tenant.metadata.name;
        const projects = tenant.spec.queue.projects.map((p) => p.name);
        const stored = await runtime.queueSigningKeys(projects.map((p) => queueProjectId(name, p)));
        const registered = new Map<string, SigningKeys>();
        for (const project of projects) {
          const keys = stored.get(queueProjectId(name, project));
          if (keys) registered.set(project, keys);
        }
        const { tokens, rotated } = await ensureTenantTokens(secretsDir, tenant, registered);
        const report = await teardown.applyTenant(tenant, tokens);
        console.log(
          `tenant/${name} applied (${tenant.spec.kv.databases.length} KV database(s), ${tenant.spec.vector.indexes.length} vector index(es), ${tenant.spec.stream.clusters.length} stream cluster(s), ${tenant.spec.queue.projects.length} queue project(s))`,
        );
        for (const project of rotated) console.log(`  queue project ${project}: signing keys rotated since the last apply; ${secretsDir}/${name}.json holds the registry's`);
        for (const purged of report.purged) console.log(`  ${purged} removed from the spec: its data is deleted`);
        for (const untouched of report.untouched) console.log(`  ${untouched} removed from the spec: ${UNTOUCHED}`);
        if (report.failed.length > 0) {
          console.error(formatFailures(report, `run \`tenants apply -f ${values.file}\` again to finish`));
          code = 1;
        }
      }
      if (await writer.markComplete('tenants-cli')) console.log('registry marked complete: unknown tokens are answered 401 again');
      return code;
    });
  }
  if (verb === 'delete' && names.length > 0) {
    return withTeardown(url, async (teardown) => {
      let code = 0;
      for (const name of names) {
        const report = await teardown.deleteTenant(name);
        await removeTenantTokens(secretsDir, name);
        if (report.failed.length > 0) {
          console.error(formatFailures(report, `its tokens are revoked; run \`tenants delete ${name}\` again to finish`));
          code = 1;
        } else {
          console.log(`tenant/${name} deleted${report.purged.length > 0 ? ` with the data of ${report.purged.join(', ')}` : ''}`);
          for (const untouched of report.untouched) console.log(`  ${untouched}: ${UNTOUCHED}`);
        }
      }
      return code;
    });
  }
  return usage(2);
}

/** What `tenants apply` and `delete` say of a resource whose engine was left as it was (TeardownReport.untouched). */
const UNTOUCHED = 'nothing wiped: its Redis server holds the data of another owner, and this database was never served from it';

function usage(code: number): number {
  (code === 0 ? console.log : console.error)(USAGE);
  return code;
}

/**
 * Runs `work` with a teardown, the registry writer and its runtime store on the control Redis; the queue Redis servers
 * are reached only when a queue project is placed or purged.
 */
async function withTeardown(url: string, work: (teardown: TenantTeardown, writer: RegistryWriter, runtime: RuntimeStore) => Promise<number>): Promise<number> {
  const queue = loadConfig(
    z.object({ ...queueStoreEnv(), ...queueServersEnv() }).transform((e) => ({ ...queueStoreConfig(e), servers: queueServersConfig(e) })),
    { QUEUE_REDIS_URL: url, ...process.env },
  );
  const redis = openRedis(url, { maxRetriesPerRequest: 3, lazyConnect: true });
  redis.on('error', () => undefined); // the failing command reports it
  const servers = new QueueServerPool(queue.servers, queue.options, () => undefined); // the failing command reports it
  try {
    await redis.connect();
    const seal = registrySealFromEnv(process.env);
    const teardown = new TenantTeardown(redis, enginePurgers((server) => servers.store(server)), { seal, placeQueueProject: (project, registered) => servers.place(project, registered) });
    return await work(teardown, new RegistryWriter(redis, seal), new RuntimeStore(redis, seal));
  } finally {
    await servers.close();
    redis.disconnect();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : String(error));
    process.exit(1);
  },
);
