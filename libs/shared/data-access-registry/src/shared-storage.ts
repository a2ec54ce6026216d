import type { Redis } from 'ioredis';
import type { z } from 'zod';
import { type KvDatabaseRecord, kvDatabaseRecordSchema, registryKeys, vectorIndexRecordSchema } from './records';
import { type RegistrySeal, SealError } from './sealed';
import { attempt } from './stored-records';
import { type TenantDocument, defaultCollection, kvServerEndpoint, kvServerShared, vectorCollectionOf, vectorCollectionShared } from './tenant-spec';

/* The rule that two tenants never share storage (docs/architecture.md, "Architecture: tenant registry"): checked when a tenant is applied. */

/**
 * Refuses what would let two tenants' resources share storage: a KV database of `doc` on the server
 * (kvServerEndpoint) of another tenant's KV database, or a vector index of `doc` on the Qdrant
 * collection (vectorCollectionOf) of another tenant's index. Within one document the schema refuses it.
 * (RegistryWriter.applyTenant, before it writes).
 * @throws Error naming the resource and the one it would share with; SealError when another tenant's KV
 *   database record does not open with this writer's key (its server cannot be told)
 */
export async function refuseSharedStorage(redis: Redis, seal: RegistrySeal, doc: TenantDocument): Promise<void> {
  const { databases } = doc.spec.kv;
  const { indexes } = doc.spec.vector;
  if (databases.length === 0 && indexes.length === 0) return;
  const servers = new Map<string, string>();
  const collections = new Map<string, string>();
  const others = <T extends { tenant: string }>(prefix: string, schema: z.ZodType<T>) => recordsOfOthers(redis, prefix, schema, doc.metadata.name);
  if (databases.length > 0) {
    for (const record of await others(registryKeys.kvDatabase(''), kvDatabaseRecordSchema)) {
      const { redisUrl } = openKvRecord(seal, record);
      const endpoint = attempt(() => kvServerEndpoint(redisUrl));
      if (endpoint) servers.set(endpoint, record.id);
    }
  }
  if (indexes.length > 0) {
    for (const record of await others(registryKeys.vectorIndex(''), vectorIndexRecordSchema)) {
      const where = attempt(() => vectorCollectionOf(record.qdrantUrl, record.collection));
      if (where) collections.set(where, record.id);
    }
  }
  const tenant = doc.metadata.name;
  for (const db of databases) {
    const endpoint = kvServerEndpoint(db.redis.url);
    const other = servers.get(endpoint);
    if (other) throw new Error(`tenant '${tenant}': ${kvServerShared(db.name, other, endpoint)}`);
  }
  for (const index of indexes) {
    const where = vectorCollectionOf(index.qdrant.url, index.qdrant.collection ?? defaultCollection(tenant, index.name));
    const other = collections.get(where);
    if (other) throw new Error(`tenant '${tenant}': ${vectorCollectionShared(index.name, other, where)}`);
  }
}

/** A stored KV database record opened. @throws SealError naming the record when its Redis URL does not open */
function openKvRecord(seal: RegistrySeal, record: KvDatabaseRecord): KvDatabaseRecord {
  try {
    return seal.openRecord('kv', record);
  } catch (error) {
    throw new SealError(`KV database ${record.id} in the registry: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** The records under `prefix` (one kind) that belong to tenants other than `tenant`; malformed ones are skipped. */
async function recordsOfOthers<T extends { tenant: string }>(redis: Redis, prefix: string, schema: z.ZodType<T>, tenant: string): Promise<T[]> {
  const found: T[] = [];
  for await (const keys of redis.scanStream({ match: `${prefix}*`, count: 500 }) as AsyncIterable<string[]>) {
    const values = keys.length > 0 ? await redis.mget(...keys) : [];
    for (const raw of values) {
      const record = raw ? schema.safeParse(JSON.parse(raw)) : undefined;
      if (record?.success && record.data.tenant !== tenant) found.push(record.data);
    }
  }
  return found;
}
