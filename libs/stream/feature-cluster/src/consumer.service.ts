import { Logger } from '@nestjs/common';
import type { StreamClusterRecord } from '@restash/shared/data-access-registry';
import { engineErrorListener, logEvent } from '@restash/shared/util-http';
import type { ConsumedRecord } from '@restash/stream/data-access-kafka';
import {
  type ConsumeRequest,
  type ConsumerConfig,
  type RestMessage,
  StreamError,
  type TopicPartitionOffset,
  parseConsumerConfig,
} from '@restash/stream/util-rest';
import type { StreamBackendCalls } from './backend-calls';
import { type ClusterTopics, kafkaGroup, kafkaTopic } from './cluster-topics';
import { type ConsumerInstance, ConsumerInstances } from './consumer-instances';
import { INSTANCE_LEASE_MS, type InstanceLocator } from './instance-locator';
import type { KafkaClients } from './kafka-clients';
import { type PeerCall, PeerGoneError } from './peer-client';
import type { ClusterView, GroupAssignments, Headers, StreamLimits, StreamObserver, StreamRegistry } from './ports';

/** A consumer instance being created by another replica at the same moment: the creation here stops (409 if the retry meets it again). */
class HeldElsewhereError extends StreamError {
  constructor() {
    super(409, 'The consumer instance is being created on another gateway replica, retry');
  }
}

/** The fields of a log line about a consumer instance: its tenant, stream cluster id, group and instance name. */
function instanceFields(instance: ConsumerInstance): { tenant: string; cluster: string; group: string; instance: string } {
  return { tenant: instance.tenant, cluster: instance.clusterId, group: instance.group, instance: instance.name };
}

/** What ConsumerService is made of: the shared parts StreamSessions makes, its registry port, observer and limits. */
export interface ConsumerServiceDeps {
  topics: ClusterTopics;
  calls: StreamBackendCalls;
  locator: InstanceLocator;
  kafka: KafkaClients;
  registry: StreamRegistry;
  observer: StreamObserver;
  limits: StreamLimits;
}

/**
 * The Stream API's consumer instances (docs/stream.md, "Stream: consumer instances"): `/consume`, `/commit`,
 * `/delete-consumer` and `GET /consumers` on the instances this replica holds, and forwarded to the replica holding
 * one elsewhere (InstanceLocator); the operations other replicas forward here ({@link servePeer}). Idle instances
 * are closed, and this replica's directory entries renewed, in the background once {@link start}ed.
 *
 * Operations throw StreamError: 400 for illegal arguments and past the instance limit, 404 for unknown topics and
 * instances, 409 while a group rebalances, 503 when Kafka, the control Redis or the holding replica cannot be reached.
 */
export class ConsumerService {
  /** Logs carry the context they always had: the Stream API's service. */
  private readonly logger = new Logger('StreamService');
  private readonly instances = new ConsumerInstances();
  private readonly topics: ClusterTopics;
  private readonly calls: StreamBackendCalls;
  private readonly locator: InstanceLocator;
  private readonly limits: StreamLimits;
  private reaper: NodeJS.Timeout | undefined;
  private renewer: NodeJS.Timeout | undefined;

  constructor(private readonly deps: ConsumerServiceDeps) {
    ({ topics: this.topics, calls: this.calls, locator: this.locator, limits: this.limits } = deps);
  }

  /** Starts closing idle instances and renewing this replica's directory entries: call once at start. */
  start(): void {
    const idleMs = this.limits.consumer.idleTimeoutMs;
    const every = Math.max(100, Math.min(5000, Math.floor(idleMs / 4)));
    this.reaper = setInterval(() => {
      for (const instance of this.instances.reap(idleMs)) void this.closeInstance(instance);
    }, every);
    this.reaper.unref();
    this.renewer = setInterval(() => void this.renewEntries(), INSTANCE_LEASE_MS / 3);
    this.renewer.unref();
    this.locator.start(() => this.renewEntries());
  }

  /** Closes every consumer instance (committing delivered offsets where auto commit is on, deleting their directory entries). */
  async close(): Promise<void> {
    clearInterval(this.reaper);
    clearInterval(this.renewer);
    await Promise.all(this.instances.drain().map((instance) => this.closeInstance(instance)));
  }

  /**
   * Closes the instances of a cluster whose record changed (StreamSessions): all of them when it `moved` (gone, or
   * other brokers or prefix), else those subscribed to a topic it no longer declares (`topics`: the record's).
   */
  async closeStale(clusterId: string, moved: boolean, topics: Record<string, number>, reason: 'cluster-changed' | 'cluster-removed'): Promise<void> {
    const stale = this.instances.removeWhere((i) => i.clusterId === clusterId && (moved || i.topics.some((t) => !Object.hasOwn(topics, t))));
    if (stale.length > 0) logEvent(this.logger, 'log', 'consumer.closed', { tenant: stale[0]?.tenant, cluster: clusterId, instances: stale.length, reason });
    await Promise.all(stale.map((instance) => this.closeInstance(instance)));
  }

  /**
   * Renews the directory entries of this replica's instances. An instance another replica holds meanwhile (its
   * entry had expired while the control Redis was away, and a request elsewhere took it over) is closed here:
   * the group keeps one member per instance. While the control Redis cannot be reached nothing changes.
   */
  private async renewEntries(): Promise<void> {
    for (const instance of this.instances.list()) {
      let claim;
      try {
        claim = await this.locator.renew(instance.clusterId, instance.group, instance.name);
      } catch {
        return;
      }
      if (!claim) return;
      if (claim.kind !== 'held' || this.instances.get(instance.clusterId, instance.group, instance.name) !== instance) continue;
      logEvent(this.logger, 'log', 'consumer.moved', { ...instanceFields(instance), holder: claim.holder.peer, text: 'another replica holds the consumer instance now; closing it here' });
      this.instances.remove(instance.clusterId, instance.group, instance.name);
      await this.closeInstance(instance);
    }
  }

  /**
   * The live replica holding an instance this replica does not hold, or undefined (held here, or nowhere).
   * @throws StreamError 503 when no replica's entry names it but the directory may have lost it (InstanceLocator.holderElsewhere)
   */
  private async holderElsewhere(view: ClusterView, group: string, name: string) {
    if (this.instances.get(view.cluster.id, group, name)) return undefined;
    return this.locator.holderElsewhere(view, group, name);
  }

  /** How long a forwarded commit or delete may take (ms): a join wait and a broker request. */
  private get instanceCallMs(): number {
    return this.limits.consumer.joinWaitMs + this.limits.kafkaRequestTimeoutMs;
  }

  /**
   * `/consume`: the messages the group has assigned to this instance and not yet returned, waiting up to
   * the request's timeout (docs/stream.md, "Stream: consumer instances"). The first request creates the instance with the header
   * configuration and waits for the group to assign partitions (at most CONSUMER_JOIN_WAIT_MS); a
   * request naming other topics than the instance's subscription replaces the instance.
   *
   * @throws StreamError 400 past the instance limit or for reset `none` without committed offsets
   */
  async consume(session: ClusterView, group: string, name: string, request: ConsumeRequest, headers: Headers): Promise<RestMessage[]> {
    await this.topics.partitionCounts(session, request.topics);
    for (let attempt = 0; ; attempt++) {
      const holder = await this.holderElsewhere(session, group, name);
      if (holder) {
        const operation = { op: 'consume', group, name, request, headers: consumerHeaders(headers) } as const;
        const forwarded = await this.locator.forward(session, holder, operation, request.timeoutMs + this.instanceCallMs);
        if (forwarded) return forwarded.value as RestMessage[];
      }
      try {
        return await this.consumeHere(session, group, name, request, headers);
      } catch (error) {
        // Another replica created the instance meanwhile: the request goes there.
        if (!(error instanceof HeldElsewhereError) || attempt > 0) throw error;
      }
    }
  }

  /** {@link consume} on this replica (topics checked already): creates the instance here when absent. */
  private async consumeHere(session: ClusterView, group: string, name: string, request: ConsumeRequest, headers: Headers): Promise<RestMessage[]> {
    const topics = [...request.topics].sort();
    const current = this.instances.get(session.cluster.id, group, name);
    if (current && (current.topics.join('\n') !== topics.join('\n') || current.consumer.failure)) {
      this.instances.remove(session.cluster.id, group, name);
      await this.closeInstance(current);
    }
    const { instance, created } = await this.instances.getOrCreate(session.cluster.id, group, name, () =>
      this.createInstance(session, group, name, topics, parseConsumerConfig(headers)),
    );
    if (created) await Promise.race([instance.consumer.joined, sleep(this.limits.consumer.joinWaitMs)]);
    let records: ConsumedRecord[];
    try {
      records = await instance.consumer.poll(request.timeoutMs);
    } catch (error) {
      throw this.calls.kafkaFailure(session, error);
    }
    const prefix = session.cluster.prefix;
    const tenantTopics = new Map<string, string>(); // broker-side name → the tenant's, one slice per topic
    // The records are the Messages, now the instance has handed them over: the tenant's topic name for the broker's.
    for (const r of records) {
      let topic = tenantTopics.get(r.topic);
      if (topic === undefined) tenantTopics.set(r.topic, (topic = r.topic.slice(prefix.length)));
      r.topic = topic;
    }
    this.deps.observer.countMessages(session.tenant, 'out', records.length);
    return records;
  }

  /**
   * `/commit`: commits the given offsets for the instance's group, or with none what the instance has
   * returned so far (docs/stream.md, "Stream: consumer instances").
   * @throws StreamError 404 for an unknown instance
   */
  async commit(session: ClusterView, group: string, name: string, offsets: TopicPartitionOffset[]): Promise<void> {
    if (offsets.length > 0) await this.topics.checkPartitions(session, offsets);
    const holder = await this.holderElsewhere(session, group, name);
    if (holder && (await this.locator.forward(session, holder, { op: 'commit', group, name, offsets }, this.instanceCallMs))) return;
    await this.commitHere(session, group, name, offsets);
  }

  /** {@link commit} on this replica (offsets checked already). */
  private async commitHere(session: ClusterView, group: string, name: string, offsets: TopicPartitionOffset[]): Promise<void> {
    const instance = this.existingInstance(session, group, name);
    const mapped = offsets.length === 0 ? undefined : offsets.map((o) => ({ ...o, topic: kafkaTopic(session, o.topic) }));
    await this.calls.kafka(session, () => instance.consumer.commit(mapped, this.limits.consumer.joinWaitMs));
  }

  /**
   * `GET /consumers`: the cluster's consumer instances on every gateway replica and their assignments (a replica
   * that does not answer within 5 s is left out).
   */
  async consumers(session: ClusterView): Promise<GroupAssignments[]> {
    const lists = await this.locator.listElsewhere(session);
    const groups = new Map<string, GroupAssignments>();
    for (const list of [this.consumersHere(session), ...lists]) {
      for (const entry of list) {
        const merged = groups.get(entry.name) ?? { name: entry.name, instances: [] };
        groups.set(entry.name, merged);
        for (const instance of entry.instances) if (!merged.instances.some((i) => i.name === instance.name)) merged.instances.push(instance);
      }
    }
    return [...groups.values()];
  }

  /** The cluster's consumer instances on this replica and their assignments. */
  private consumersHere(session: ClusterView): GroupAssignments[] {
    const groups = new Map<string, GroupAssignments>();
    const prefix = session.cluster.prefix;
    for (const instance of this.instances.ofCluster(session.cluster.id)) {
      const entry = groups.get(instance.group) ?? { name: instance.group, instances: [] };
      groups.set(instance.group, entry);
      const topics = Object.entries(instance.consumer.assignment)
        .filter(([, partitions]) => partitions.length > 0)
        .map(([topic, partitions]) => ({ topic: topic.slice(prefix.length), partitions: [...partitions].sort((a, b) => a - b) }));
      entry.instances.push({ name: instance.name, topics });
    }
    return [...groups.values()];
  }

  /**
   * `/delete-consumer`: stops and removes the instance (auto commit on: delivered offsets are committed first).
   * @throws StreamError 404 for an unknown instance
   */
  async deleteConsumer(session: ClusterView, group: string, name: string): Promise<void> {
    const holder = await this.holderElsewhere(session, group, name);
    if (holder && (await this.locator.forward(session, holder, { op: 'delete', group, name }, this.instanceCallMs))) return;
    await this.deleteHere(session, group, name);
  }

  /** {@link deleteConsumer} on this replica. @throws StreamError 404 for an instance this replica does not hold */
  private async deleteHere(session: ClusterView, group: string, name: string): Promise<void> {
    this.existingInstance(session, group, name);
    const instance = this.instances.remove(session.cluster.id, group, name);
    if (instance) await this.closeInstance(instance);
  }

  /**
   * Runs an operation forwarded by another replica on an instance this replica holds (PeerClient.call).
   * @returns the operation's value (null for commit and delete)
   * @throws PeerGoneError when the call is for another start of this replica; StreamError as the operation
   */
  async servePeer(call: PeerCall): Promise<unknown> {
    if (call.boot !== this.locator.boot) throw new PeerGoneError();
    let cluster: StreamClusterRecord | null;
    try {
      cluster = await this.deps.registry.streamCluster(call.cluster);
    } catch {
      throw new StreamError(503, 'Service unavailable: the tenant registry cannot be reached');
    }
    if (!cluster) {
      // Missing from a registry being written again (the control Redis restarted empty) is not gone.
      const complete = await this.deps.registry.complete().catch(() => false);
      throw complete ? new StreamError(404, 'The stream cluster is not in the registry any more') : new StreamError(503, 'Service unavailable: the tenant registry cannot be reached');
    }
    const view: ClusterView = { tenant: cluster.tenant, cluster, kafka: this.deps.kafka.of(cluster) };
    switch (call.op) {
      case 'consume':
        await this.topics.partitionCounts(view, call.request.topics);
        return this.consumeHere(view, call.group, call.name, call.request, call.headers);
      case 'commit':
        await this.commitHere(view, call.group, call.name, call.offsets);
        return null;
      case 'delete':
        await this.deleteHere(view, call.group, call.name);
        return null;
      case 'list':
        return this.consumersHere(view);
    }
  }

  private existingInstance(session: ClusterView, group: string, name: string): ConsumerInstance {
    const instance = this.instances.get(session.cluster.id, group, name);
    if (!instance) throw new StreamError(404, `Consumer instance '${name}' of group '${group}' not found`);
    return instance;
  }

  /**
   * Creates an instance here, claiming its directory entry first (released again when the creation fails).
   * @throws StreamError 400 past the cluster's instance limit (on all replicas); HeldElsewhereError when another replica claimed it first
   */
  private async createInstance(session: ClusterView, group: string, name: string, topics: string[], config: ConsumerConfig): Promise<ConsumerInstance> {
    const limit = Object.values(session.cluster.topics).reduce((sum, n) => sum + n, 0);
    const claim = await this.locator.claim(session, group, name, limit);
    if (claim.kind === 'limit') throw StreamError.badRequest(`Illegal argument: at most ${limit} consumer instances (the partition count of all topics) may be open`);
    if (claim.kind === 'held') throw new HeldElsewhereError();
    try {
      return await this.startInstance(session, group, name, topics, config);
    } catch (error) {
      await this.locator.release(session.cluster.id, group, name);
      throw error;
    }
  }

  private async startInstance(session: ClusterView, group: string, name: string, topics: string[], config: ConsumerConfig): Promise<ConsumerInstance> {
    const { cluster, tenant } = session;
    const groupId = kafkaGroup(session, group);
    const kafkaTopics = topics.map((t) => kafkaTopic(session, t));
    if (config.autoOffsetReset === 'none') {
      const partitions = await this.topics.allPartitions(session, topics);
      const committed = await this.calls.kafka(session, () => session.kafka.committed(groupId, partitions.map((p) => ({ ...p, topic: kafkaTopic(session, p.topic) }))));
      const missing = committed.map((c, i) => ({ ...c, topic: partitions[i]?.topic ?? '' })).filter((c) => c.offset < 0);
      if (missing.length > 0) {
        throw StreamError.badRequest(
          `No committed offset for ${missing.map((m) => `${m.topic}-${m.partition}`).join(', ')} in group '${group}', and Stream-Auto-Offset-Reset is none`,
        );
      }
    }
    const consumer = session.kafka.consumer({
      groupId,
      topics: kafkaTopics,
      config,
      sessionTimeoutMs: this.limits.consumer.sessionTimeoutMs,
      maxWaitMs: this.limits.consumer.maxWaitMs,
      maxBufferedRecords: this.limits.consumer.maxBufferedRecords,
      maxBufferedBytes: this.limits.consumer.maxBufferedBytes,
      onError: engineErrorListener(this.logger, 'kafka', { tenant, cluster: cluster.id, group, instance: name }),
    });
    try {
      await consumer.start();
    } catch (error) {
      await consumer.close().catch(() => undefined);
      throw this.calls.kafkaFailure(session, error);
    }
    this.deps.observer.instanceOpened(tenant, 1);
    return { tenant, clusterId: cluster.id, group, name, topics, consumer };
  }

  /** Closes an instance this replica removed from its own, and deletes its directory entry if this replica still holds it. */
  private async closeInstance(instance: ConsumerInstance): Promise<void> {
    this.deps.observer.instanceOpened(instance.tenant, -1);
    await Promise.all([
      instance.consumer.close().catch((error: unknown) => logEvent(this.logger, 'warn', 'consumer.close-failed', { engine: 'kafka', ...instanceFields(instance), error })),
      this.locator.release(instance.clusterId, instance.group, instance.name),
    ]);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** The consumer configuration headers of a request (`Stream-*`, `Kafka-*`), as a holder needs them to create the instance. */
function consumerHeaders(headers: Headers): Record<string, string> {
  const picked: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    const first = Array.isArray(value) ? value[0] : value;
    if (first !== undefined && (name.startsWith('stream-') || name.startsWith('kafka-'))) picked[name] = first;
  }
  return picked;
}
