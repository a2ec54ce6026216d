import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import { RegistryWriter } from '@restash/shared/data-access-registry';
import { ensureTenantTokens } from './secrets';
import { parseTenantFile } from './tenant-file';

const USAGE = `usage:
  tenants apply -f FILE [--secrets-dir DIR]   write the tenants of FILE into the registry
  tenants delete NAME...                      remove tenants and everything they own

The registry is the control Redis named by CONTROL_REDIS_URL. Plain tokens are written to
DIR/<tenant>.json (default .restash/secrets) and reused on the next apply.`;

/**
 * The local applier (DESIGN.md, tenant registry): writes tenants, their KV databases, vector indexes, stream clusters and token
 * digests into the registry, as the operator does in a cluster.
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
  if (verb === 'apply' && values.file) {
    const tenants = parseTenantFile(await readFile(values.file, 'utf8'), process.env);
    return withRegistry(url, async (writer) => {
      for (const tenant of tenants) {
        const tokens = await ensureTenantTokens(values['secrets-dir'], tenant);
        await writer.applyTenant(tenant, tokens);
        console.log(
          `tenant/${tenant.metadata.name} applied (${tenant.spec.kv.databases.length} KV database(s), ${tenant.spec.vector.indexes.length} vector index(es), ${tenant.spec.stream.clusters.length} stream cluster(s), ${tenant.spec.queue.projects.length} queue project(s))`,
        );
      }
    });
  }
  if (verb === 'delete' && names.length > 0) {
    return withRegistry(url, async (writer) => {
      for (const name of names) {
        await writer.deleteTenant(name);
        console.log(`tenant/${name} deleted`);
      }
    });
  }
  return usage(2);
}

function usage(code: number): number {
  (code === 0 ? console.log : console.error)(USAGE);
  return code;
}

async function withRegistry(url: string, work: (writer: RegistryWriter) => Promise<void>): Promise<number> {
  const redis = new Redis(url, { maxRetriesPerRequest: 3, lazyConnect: true });
  redis.on('error', () => undefined); // the failing command reports it
  try {
    await redis.connect();
    await work(new RegistryWriter(redis));
    return 0;
  } finally {
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
