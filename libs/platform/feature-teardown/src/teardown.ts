import type { Redis } from 'ioredis';
import { type KvDatabaseRecord, type QueueProjectRecord, RegistryWriter, type RegistryWriterOptions, type RegistrySeal, type RetiredResource, type StreamClusterRecord, type TenantDocument, type TenantTeardownRecord, type TenantTokens, type VectorIndexRecord, defaultCollection, kvServerEndpoint, platformOwner, registryKeys, tenantTeardownRecordSchema, vectorCollectionOf } from '@restash/shared/data-access-registry';
import { serverRunId } from '@restash/shared/data-access-redis';

/** Deletes one resource's data in its engine. Each must be idempotent: a teardown that stopped runs it again. */
export interface ResourcePurgers {
  /**
   * Empties the KV database's Redis (keys, scripts, functions, the tenant's ACL users), unless `boundTo`
   * (the id of the database a server's `run_id` is bound to, `platform:<role>` for the control Redis and the servers
   * the platform claimed, or null) names another owner.
   */
  kv(record: KvDatabaseRecord, boundTo: (runId: string) => Promise<string | null>): Promise<'purged' | 'other'>;
  /** Deletes the vector index's Qdrant collection. */
  vector(record: VectorIndexRecord): Promise<void>;
  /** Deletes the stream cluster's prefixed Kafka topics and consumer groups. */
  stream(record: StreamClusterRecord): Promise<void>;
  /** Deletes the queue project's messages, DLQ, events, deduplication ids and cancel requests. */
  queue(record: QueueProjectRecord): Promise<void>;
}

/** A resource whose data could not be purged, and why. */
export interface TeardownFailure {
  /** e.g. `vector index acme.docs` (see {@link describeResource}). */
  resource: string;
  /** The resource's API and id (`<tenant>.<name>`), for callers that match failures to resources. */
  api: RetiredResource['api'];
  id: string;
  reason: string;
}

/** What one teardown run did: the resources purged and those left (a re-run retries them). */
export interface TeardownReport {
  tenant: string;
  /** Resources whose data was deleted. */
  purged: string[];
  /**
   * Resources that are gone with nothing wiped: KV databases whose server holds another owner's data (another
   * database, or the platform's), which they were never served from.
   */
  untouched: string[];
  failed: TeardownFailure[];
}

/** Thrown by {@link TenantTeardown.applyTenant} when the tenant may not be applied: its deletion, or a purge, is unfinished. */
export class TeardownPendingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TeardownPendingError';
  }
}

/** Settings of a {@link TenantTeardown}. */
export interface TenantTeardownOptions {
  /** Longest time one resource's purge may take before it is reported as failed, in ms (default 120000). */
  purgeTimeoutMs?: number;
  /** The registry's seal (REGISTRY_SEAL_KEY), which seals and opens the records' secrets. */
  seal: RegistrySeal;
  /** How applies place new queue projects on the queue Redis servers (RegistryWriterOptions; QueueServerPool.place). */
  placeQueueProject?: RegistryWriterOptions['placeQueueProject'];
}

/** The words a report uses for a resource: `<kind> <id>`, e.g. `queue project acme.jobs`. */
export function describeResource(resource: RetiredResource): string {
  const kind = { kv: 'KV database', vector: 'vector index', stream: 'stream cluster', queue: 'queue project' }[resource.api];
  return `${kind} ${resource.record.id}`;
}

/**
 * The control-Redis state a resource owns besides its registry record and tokens: exact keys, and SCAN patterns
 * whose matches it owns. Quota counters (`restash:v1:quota:<api>:<id>:<day>`, one per UTC day) for every API;
 * for a vector index also its namespaces and write-counter hashes; for a stream cluster the hash of which gateway replica holds each consumer instance. (Resumable queries are matched by their `index` field, see
 * {@link isResumableOf}; a KV database's server binding `restash:v1:kv:server:<run_id>` by its value.) Resource ids are two DNS labels joined by '.', so they hold no glob character.
 */
export function controlStateOf(resource: RetiredResource): { keys: string[]; patterns: string[] } {
  const { api, record } = resource;
  return {
    keys:
      api === 'vector'
        ? [registryKeys.vectorNamespaces(record.id), registryKeys.vectorWrites(record.id)]
        : api === 'stream'
          ? [registryKeys.streamInstances(record.id)]
          : [],
    patterns: [registryKeys.quota(api, record.id, '*')],
  };
}

/** Whether a stored resumable-query state (vector-gateway's JSON, `{ index, … }`) belongs to the vector index `id`. */
export function isResumableOf(raw: string | null, id: string): boolean {
  if (!raw) return false;
  try {
    return (JSON.parse(raw) as { index?: unknown }).index === id;
  } catch {
    return false;
  }
}

/**
 * The text `tenants delete` and `tenants apply` print for a report: one line per failed resource with its
 * reason and how to finish; empty when everything was purged.
 */
export function formatFailures(report: TeardownReport, finish: string): string {
  if (report.failed.length === 0) return '';
  const lines = report.failed.map((f) => `  - ${f.resource}: ${f.reason}`);
  return `tenant/${report.tenant}: could not delete the data of ${report.failed.length} resource(s); it is still stored:\n${lines.join('\n')}\n${finish}`;
}

/**
 * Deletes what tenants own (issue 11; docs/architecture.md, "Architecture: tenant registry"): their registry entries
 * and the data of their KV databases, vector indexes, stream clusters and queue projects, with the
 * control-Redis state of each (quota counters, vector namespaces, resumable queries). The local applier
 * (`tenants`) and the operator's finalizer call it.
 *
 * Order: the tenant leaves the registry first in one transaction (tokens revoked, records gone, every
 * gateway told), its resource records kept in a teardown record; then each resource's data is purged; a
 * purged resource leaves the teardown record. Whatever failed stays there: the report names it, a re-run
 * retries it, and until it is gone the tenant cannot be applied again, so a re-created tenant never sees
 * an old one's data.
 */
export class TenantTeardown {
  private readonly writer: RegistryWriter;
  private readonly timeoutMs: number;

  /**
   * @param control the control Redis (the registry, quota counters, vector index state)
   * @param purgers each engine's purge (see `enginePurgers`)
   */
  constructor(
    private readonly control: Redis,
    private readonly purgers: ResourcePurgers,
    options: TenantTeardownOptions,
  ) {
    this.writer = new RegistryWriter(control, options.seal, options.placeQueueProject ? { placeQueueProject: options.placeQueueProject } : {});
    this.timeoutMs = options.purgeTimeoutMs ?? 120_000;
  }

  /**
   * Deletes a tenant and everything it owns; running it again finishes an unfinished deletion. No-op for an
   * unknown tenant with nothing left to purge.
   * @returns the report: `failed` is empty when everything is gone
   * @throws Error when the control Redis fails before the tenant left the registry
   */
  async deleteTenant(tenant: string): Promise<TeardownReport> {
    const teardown = await this.writer.deleteTenant(tenant);
    return this.purge(teardown);
  }

  /**
   * Applies a tenant (RegistryWriter.applyTenant), first finishing purges it left unfinished, and purges the
   * data of every resource the new spec drops, so that a resource added again under the same name starts empty.
   * @returns the report of the dropped resources' purge (a failed one is retried by the next apply)
   * @throws TeardownPendingError when the tenant's deletion is unfinished, or an earlier purge still fails
   *   (nothing is applied then)
   */
  async applyTenant(doc: TenantDocument, tokens: TenantTokens): Promise<TeardownReport> {
    const tenant = doc.metadata.name;
    const pending = await this.writer.teardown(tenant);
    if (pending?.deleting) {
      const left = pending.resources.map(describeResource).join(', ') || 'registry entries';
      throw new TeardownPendingError(
        `tenant/${tenant} is being deleted and its data is not purged yet (${left}); run \`tenants delete ${tenant}\` until it succeeds, then apply it again`,
      );
    }
    if (pending) {
      const earlier = await this.purge(pending);
      if (earlier.failed.length > 0) {
        throw new TeardownPendingError(formatFailures(earlier, `resources dropped from tenant/${tenant} earlier must be purged before it is applied again`));
      }
    }
    await this.refuseLeftovers(doc);
    const dropped = await this.writer.droppedResources(doc);
    const reused = reusedStorage(doc, dropped, 'that this apply drops');
    if (reused.length > 0) {
      throw new TeardownPendingError(
        `tenant/${tenant}: a resource would reuse what a dropped one leaves, and the purge would wipe it; apply without the new resource first, then with it:\n${reused.map((p) => `  - ${p}`).join('\n')}`,
      );
    }
    const teardown = dropped.length > 0 ? await this.writer.retireResources(tenant, dropped) : null;
    try {
      await this.writer.applyTenant(doc, tokens);
    } catch (error) {
      // Not applied: the dropped resources are still served, so their data must not be purged.
      if (dropped.length > 0) await this.writer.finishTeardown(tenant, dropped);
      throw error;
    }
    return teardown ? this.purge(teardown) : { tenant, purged: [], untouched: [], failed: [] };
  }

  /**
   * Refuses a KV database on a Redis server, or a vector index on a Qdrant collection, that another tenant's
   * unfinished teardown still has to purge: the purge would wipe the new resource's data, and until then the
   * new resource would see the old data.
   * @throws TeardownPendingError naming the resource and the tenant whose teardown holds it; SealError when such a
   *   teardown record does not open with the registry's seal
   */
  private async refuseLeftovers(doc: TenantDocument): Promise<void> {
    const problems: string[] = [];
    for (const key of await this.scan(registryKeys.tenantTeardown('*'))) {
      const raw = await this.control.get(key);
      const pending = raw ? tenantTeardownRecordSchema.safeParse(JSON.parse(raw)) : undefined;
      if (!pending?.success || pending.data.name === doc.metadata.name) continue;
      problems.push(...reusedStorage(doc, this.writer.openTeardown(pending.data).resources, `of tenant/${pending.data.name}`));
    }
    if (problems.length > 0) {
      throw new TeardownPendingError(
        `tenant/${doc.metadata.name} cannot be applied until another tenant's deletion finishes:\n${problems.map((p) => `  - ${p}`).join('\n')}`,
      );
    }
  }

  /** Purges every resource of a teardown record (concurrently), then files what is left. */
  private async purge(teardown: TenantTeardownRecord): Promise<TeardownReport> {
    const outcomes = await Promise.all(
      teardown.resources.map(async (resource) => {
        try {
          return { resource, wiped: await this.withTimeout(this.purgeOne(resource)) };
        } catch (error) {
          return { resource, reason: error instanceof Error ? error.message : String(error) };
        }
      }),
    );
    const done = outcomes.filter((o) => o.reason === undefined);
    if (done.length > 0) await this.writer.finishTeardown(teardown.name, done.map((o) => o.resource));
    return {
      tenant: teardown.name,
      purged: done.filter((o) => o.wiped).map((o) => describeResource(o.resource)),
      untouched: done.filter((o) => !o.wiped).map((o) => describeResource(o.resource)),
      failed: outcomes.flatMap((o) =>
        o.reason === undefined ? [] : [{ resource: describeResource(o.resource), api: o.resource.api, id: o.resource.record.id, reason: o.reason }],
      ),
    };
  }

  /**
   * Who a Redis server (by `run_id`) holds data for: `platform:control` for the control Redis itself, else its
   * binding (a KV database's id, `platform:<role>` for a server the platform claimed, or null). A tenant's KV database
   * may name the control Redis under another host name; its purge must not FLUSHALL the registry of every tenant.
   */
  private async serverOwner(runId: string): Promise<string | null> {
    if (runId === (await serverRunId(this.control))) return platformOwner('control');
    return this.control.get(registryKeys.kvServer(runId));
  }

  /** @returns false when nothing of the resource's engine was wiped (a KV database on another owner's server) */
  private async purgeOne(resource: RetiredResource): Promise<boolean> {
    let wiped = true;
    switch (resource.api) {
      case 'kv': {
        const { id } = resource.record;
        wiped = (await this.purgers.kv(resource.record, (runId) => this.serverOwner(runId))) === 'purged';
        await this.deleteWhere(registryKeys.kvServer('*'), (raw) => raw === id); // its server's binding
        break;
      }
      case 'vector': {
        const { id } = resource.record;
        await this.purgers.vector(resource.record);
        await this.deleteWhere(registryKeys.vectorResumable('*'), (raw) => isResumableOf(raw, id));
        break;
      }
      case 'stream':
        await this.purgers.stream(resource.record);
        break;
      case 'queue':
        await this.purgers.queue(resource.record);
        break;
    }
    const { keys, patterns } = controlStateOf(resource);
    for (const pattern of patterns) keys.push(...(await this.scan(pattern)));
    if (keys.length > 0) await this.control.del(...keys);
    return wiped;
  }

  /**
   * Deletes the control-Redis string keys matching `pattern` whose value a resource owns: an index's resumable
   * queries (which would otherwise live until their idle timeout), a KV database's server binding.
   */
  private async deleteWhere(pattern: string, owned: (raw: string | null) => boolean): Promise<void> {
    const keys = await this.scan(pattern);
    for (let i = 0; i < keys.length; i += 500) {
      const batch = keys.slice(i, i + 500);
      const values = await this.control.mget(...batch);
      const mine = batch.filter((_, j) => owned(values[j] ?? null));
      if (mine.length > 0) await this.control.del(...mine);
    }
  }

  /** Every key matching `pattern` (SCAN through ioredis's scanStream; a key may repeat, as SCAN allows). */
  private async scan(pattern: string): Promise<string[]> {
    const keys: string[] = [];
    for await (const batch of this.control.scanStream({ match: pattern, count: 1000 }) as AsyncIterable<string[]>) keys.push(...batch);
    return keys;
  }

  private async withTimeout<T>(work: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${this.timeoutMs} ms`)), this.timeoutMs);
    });
    try {
      return await Promise.race([work, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/**
 * The KV databases and vector indexes of `doc` that would live on what a resource to be purged still holds:
 * its Redis server (same host:port) or its Qdrant collection (same URL and collection). Pure.
 * @param owner how the problems name the holders, e.g. `of tenant/acme`
 * @returns one line per conflict (empty when none)
 */
export function reusedStorage(doc: TenantDocument, resources: RetiredResource[], owner: string): string[] {
  const problems: string[] = [];
  for (const resource of resources) {
    const holder = `${describeResource(resource)} ${owner}`;
    if (resource.api === 'kv') {
      const endpoint = sameEndpoint(resource.record.redisUrl);
      for (const db of doc.spec.kv.databases) {
        if (endpoint && sameEndpoint(db.redis.url) === endpoint) problems.push(`KV database '${db.name}' is on Redis server ${endpoint}, which still holds the data of ${holder}`);
      }
    } else if (resource.api === 'vector') {
      const where = attempt(() => vectorCollectionOf(resource.record.qdrantUrl, resource.record.collection));
      for (const index of doc.spec.vector.indexes) {
        const collection = index.qdrant.collection ?? defaultCollection(doc.metadata.name, index.name);
        if (where && attempt(() => vectorCollectionOf(index.qdrant.url, collection)) === where) {
          problems.push(`vector index '${index.name}' uses Qdrant collection ${collection}, which still holds the data of ${holder}`);
        }
      }
    }
  }
  return problems;
}

/** The `host:port` of a Redis URL (kvServerEndpoint), or undefined for a malformed one. */
function sameEndpoint(url: string): string | undefined {
  return attempt(() => kvServerEndpoint(url));
}

/** The value of `make`, or undefined when it throws (a malformed URL matches nothing). */
function attempt<T>(make: () => T): T | undefined {
  try {
    return make();
  } catch {
    return undefined;
  }
}
