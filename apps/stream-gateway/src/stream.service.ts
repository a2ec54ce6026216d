import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { Redis } from 'ioredis';
import { RegistryReader, type StreamClusterRecord, registryKeys } from '@restash/shared/data-access-registry';
import { RepeatLimiter, engineErrorListener, logEvent } from '@restash/shared/util-http';
import { CONTROL_REDIS, type Credentials, type Grant, TenantGate } from '@restash/shared/feature-tenancy';
import { type ConsumedRecord, KafkaCluster, type OutgoingMessage, ProduceRefusedError, type ProducedMetadata, kafkaErrorCode } from '@restash/stream/data-access-kafka';
import {
  type ConsumeRequest,
  type ConsumerConfig,
  type FetchRequest,
  type OffsetsAt,
  type ProduceMessage,
  type RestMessage,
  StreamError,
  type TopicPartition,
  type TopicPartitionOffset,
  parseConsumerConfig,
} from '@restash/stream/util-rest';
import { STREAM_CONFIG, type StreamGatewayConfig } from './config';
import { type ConsumerInstance, ConsumerInstances } from './consumer-instances';
import { type Holder, InstanceDirectory } from './instance-directory';
import { PeerClient, type PeerCall, type PeerOperation, peerHost, peerSecret } from './peers';
import { StreamMetrics } from './stream-metrics';

/** What an operation needs of a request: its tenant, its stream cluster's record and the cluster's Kafka clients. */
export interface ClusterView {
  tenant: string;
  cluster: StreamClusterRecord;
  kafka: KafkaCluster;
}

/** An authenticated request's view of its stream cluster. */
export interface Session extends ClusterView {
  grant: Grant<'stream'>;
}

/** Request headers with lower-case names (Node's IncomingHttpHeaders). */
export type Headers = Record<string, string | string[] | undefined>;

/** Thrown by {@link PeerCall} handling when the call is for another start of this replica (answered 421). */
export class PeerGoneError extends Error {
  constructor() {
    super('this gateway replica is not the one the call was for (it restarted)');
    this.name = 'PeerGoneError';
  }
}

/** A consumer instance being created by another replica at the same moment: the creation here stops (409 if the retry meets it again). */
class HeldElsewhereError extends StreamError {
  constructor() {
    super(409, 'The consumer instance is being created on another gateway replica, retry');
  }
}

/** How long a consumer instance's directory entry lives without renewal (ms); the holder renews it every third of that. */
const INSTANCE_LEASE_MS = 15_000;
/** How long after the control Redis came back a missing directory entry is not trusted (ms): every replica reconnects and renews within it. */
const DIRECTORY_SETTLE_MS = 5_000;

/** Spec 002's GroupAssignments, as `GET /consumers` lists them. */
export interface GroupAssignments {
  name: string;
  instances: Array<{ name: string; topics: Array<{ topic: string; partitions: number[] }> }>;
}

/** Registry keys of stream cluster records, followed by the cluster id. */
const STREAM_CLUSTER_KEY = registryKeys.streamCluster('');

/** Kafka error codes of records the broker refuses (400) and of batches over its size limits (413). */
const REFUSED_RECORD = new Set(['INVALID_TIMESTAMP', 'INVALID_RECORD', 'CORRUPT_MESSAGE']);
const TOO_LARGE = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE']);
/** Kafka error codes that mean "the group is moving; try again" rather than "Kafka is down". */
const GROUP_BUSY = new Set(['REBALANCE_IN_PROGRESS', 'ILLEGAL_GENERATION', 'UNKNOWN_MEMBER_ID', 'NOT_COORDINATOR', 'COORDINATOR_LOAD_IN_PROGRESS']);

/** The fields of a log line about a consumer instance: its tenant, stream cluster id, group and instance name. */
function instanceFields(instance: ConsumerInstance): { tenant: string; cluster: string; group: string; instance: string } {
  return { tenant: instance.tenant, cluster: instance.clusterId, group: instance.group, instance: instance.name };
}

/**
 * The Stream REST API (docs/stream.md, "What the Stream API does") between HTTP and Kafka:
 * opens the cluster of Basic credentials through the tenant gate, maps the tenant's topic and group
 * names onto the broker's prefixed ones and back, and runs each operation on the cluster's Kafka
 * clients. Admission, encoding and HTTP stay in StreamRoutes.
 *
 * Operations throw {@link StreamError}: 400 for malformed or illegal arguments, 401/403 for
 * credentials, 404 for unknown topics and consumer instances, 409 while a group rebalances, 413/429
 * for limits, 503 when Kafka or the control Redis cannot be reached, 504 when offsets take too long.
 */
@Injectable()
export class StreamService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(StreamService.name);
  /** An engine failing every request alike is logged once per 10 s. */
  private readonly repeats = new RepeatLimiter();
  /** Kafka clients by broker list (`brokers.join(',')`). */
  private readonly clusters = new Map<string, KafkaCluster>();
  /** The broker list and prefix each cluster id's clients and instances were opened with. */
  private readonly clusterUse = new Map<string, { brokers: string; prefix: string }>();
  private readonly clustersByRecord = new WeakMap<StreamClusterRecord, KafkaCluster>();
  private readonly topicsReady = new WeakMap<StreamClusterRecord, Promise<void>>();
  private readonly instances = new ConsumerInstances();
  private reaper: NodeJS.Timeout | undefined;
  private renewer: NodeJS.Timeout | undefined;
  /** This start of this replica, as peers and the instance directory know it. */
  private readonly boot = randomUUID();
  private readonly peers: PeerClient;
  /** Made on first use, once the API port is bound (its address is this replica's in the directory). */
  private openedDirectory: InstanceDirectory | undefined;
  /** When the control Redis connection came back after it was lost (performance.now(); -Infinity: never lost). */
  private controlBackAt = -Infinity;
  private controlLost = false;

  constructor(
    private readonly registry: RegistryReader,
    private readonly gate: TenantGate,
    @Inject(STREAM_CONFIG) private readonly config: StreamGatewayConfig,
    private readonly metrics: StreamMetrics,
    @Inject(CONTROL_REDIS) private readonly control: Redis,
    private readonly adapterHost: HttpAdapterHost,
  ) {
    this.peers = new PeerClient(peerSecret(config.registrySealKey));
  }

  onModuleInit(): void {
    // Any replica's registry write: what this gateway holds for the cluster must not outlive the change.
    this.registry.onChange((key) => {
      if (key.startsWith(STREAM_CLUSTER_KEY)) void this.recheckCluster(key.slice(STREAM_CLUSTER_KEY.length));
    });
    const every = Math.max(100, Math.min(5000, Math.floor(this.config.consumer.idleTimeoutMs / 4)));
    this.reaper = setInterval(() => {
      for (const instance of this.instances.reap(this.config.consumer.idleTimeoutMs)) void this.closeInstance(instance);
    }, every);
    this.reaper.unref();
    this.renewer = setInterval(() => void this.renewEntries(), INSTANCE_LEASE_MS / 3);
    this.renewer.unref();
    // A control Redis back (maybe restarted empty) gets this replica's entries at once, before requests that reach
    // another replica could find none and create a second instance there.
    this.control.on('close', () => (this.controlLost = true));
    this.control.on('ready', () => {
      if (this.controlLost) this.controlBackAt = performance.now();
      this.controlLost = false;
      void this.renewEntries();
    });
  }

  /** Closes every consumer instance (committing delivered offsets where auto commit is on, deleting their directory entries), then the clients. */
  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.reaper);
    clearInterval(this.renewer);
    await Promise.all(this.instances.drain().map((instance) => this.closeInstance(instance)));
    await Promise.all([...this.clusters.values()].map((cluster) => cluster.close()));
    await this.peers.close();
  }

  /**
   * The instance directory, with this replica's address: PEER_HOST or derived (peerHost), and the bound API port.
   */
  private directory(): InstanceDirectory {
    if (!this.openedDirectory) {
      const address = this.adapterHost.httpAdapter.getHttpServer().address() as { port: number } | string | null;
      const port = address && typeof address === 'object' ? address.port : this.config.http.port;
      const host = peerHost(this.config.peerHost, this.config.http.host);
      const peer = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
      this.openedDirectory = new InstanceDirectory(this.control, { boot: this.boot, peer }, INSTANCE_LEASE_MS);
    }
    return this.openedDirectory;
  }

  /**
   * Renews the directory entries of this replica's instances. An instance another replica holds meanwhile (its
   * entry had expired while the control Redis was away, and a request elsewhere took it over) is closed here:
   * the group keeps one member per instance. While the control Redis cannot be reached nothing changes.
   */
  private async renewEntries(): Promise<void> {
    if (!this.openedDirectory) return;
    for (const instance of this.instances.list()) {
      let claim;
      try {
        claim = await this.openedDirectory.claim(instance.clusterId, instance.group, instance.name, -1);
      } catch {
        return;
      }
      if (claim.kind !== 'held' || this.instances.get(instance.clusterId, instance.group, instance.name) !== instance) continue;
      logEvent(this.logger, 'log', 'consumer.moved', { ...instanceFields(instance), holder: claim.holder.peer, text: 'another replica holds the consumer instance now; closing it here' });
      this.instances.remove(instance.clusterId, instance.group, instance.name);
      await this.closeInstance(instance);
    }
  }

  /** Runs an instance-directory call, turning a control-Redis failure into the API's 503. */
  private async directoryCall<T>(view: ClusterView, call: (directory: InstanceDirectory) => Promise<T>): Promise<T> {
    try {
      return await call(this.directory());
    } catch (error) {
      if (error instanceof StreamError) throw error;
      this.metrics.backendError(view.tenant, 'registry');
      this.repeats.logEvent(this.logger, 'warn', 'engine.call-failed', { engine: 'control-redis', tenant: view.tenant, call: 'instance-directory', error });
      throw new StreamError(503, 'Service unavailable: the tenant registry cannot be reached');
    }
  }

  /**
   * The live replica holding an instance this replica does not hold, or undefined (held here, or nowhere).
   * @throws StreamError 503 when no replica's entry names it but the directory may have lost it ({@link trustMissingEntry})
   */
  private async holderElsewhere(view: ClusterView, group: string, name: string): Promise<Holder | undefined> {
    if (this.instances.get(view.cluster.id, group, name)) return undefined;
    const holder = await this.directoryCall(view, (d) => d.holderElsewhere(view.cluster.id, group, name));
    if (!holder) await this.trustMissingEntry();
    return holder;
  }

  /**
   * A missing directory entry means "held nowhere" only once the directory is whole again after the control Redis
   * restarted empty: every holder renews its entries as it reconnects, so for DIRECTORY_SETTLE_MS after this
   * replica reconnected, and while the registry is being written again, an instance may be held by a replica that
   * has not renewed yet. Creating it here then would make a second group member, and answering 404 would lie.
   * @throws StreamError 503 (retry) in that window
   */
  private async trustMissingEntry(): Promise<void> {
    const settled = performance.now() - this.controlBackAt >= DIRECTORY_SETTLE_MS;
    if (settled && (await this.registry.complete().catch(() => false))) return;
    throw new StreamError(503, 'Service unavailable: the control Redis restarted and the consumer instances are being located again; retry');
  }

  /**
   * Runs an operation on the replica holding the instance.
   * @returns the holder's value, or undefined when the holder is gone (its entry is then deleted)
   */
  private async forward(view: ClusterView, holder: Holder, operation: PeerOperation & { group: string; name: string }, waitMs: number): Promise<{ value: unknown } | undefined> {
    const answer = await this.peers.call(holder, view.cluster.id, operation, waitMs);
    if (answer.kind === 'value') return { value: answer.value };
    logEvent(this.logger, 'log', 'consumer.holder-gone', {
      tenant: view.tenant,
      cluster: view.cluster.id,
      group: operation.group,
      instance: operation.name,
      holder: holder.peer,
      text: 'the replica holding the consumer instance is gone; the next request takes it over',
    });
    await this.directoryCall(view, (d) => d.release(view.cluster.id, operation.group, operation.name, holder.boot));
    return undefined;
  }

  /**
   * A stream cluster's record was written or deleted. When it is gone, or names other brokers or another
   * prefix, its consumer instances are closed and its Kafka clients too unless another cluster on the
   * same brokers uses them; when it no longer declares a topic, the instances subscribed to it are closed.
   * Cached records were dropped by the registry reader already. While the registry cannot be read,
   * everything is kept.
   */
  private async recheckCluster(id: string): Promise<void> {
    const used = this.clusterUse.get(id);
    if (!used) return;
    let record: StreamClusterRecord | null;
    try {
      record = await this.registry.streamCluster(id);
      // A registry being written again (the control Redis restarted empty) lacks the record for a while: not deleted.
      if (!record && !(await this.registry.complete())) return;
    } catch {
      return;
    }
    const moved = !record || record.brokers.join(',') !== used.brokers || record.prefix !== used.prefix;
    const topics = record?.topics ?? {};
    const stale = this.instances.removeWhere((i) => i.clusterId === id && (moved || i.topics.some((t) => !Object.hasOwn(topics, t))));
    if (stale.length > 0) {
      logEvent(this.logger, 'log', 'consumer.closed', { tenant: stale[0]?.tenant, cluster: id, instances: stale.length, reason: record ? 'cluster-changed' : 'cluster-removed' });
    }
    await Promise.all(stale.map((instance) => this.closeInstance(instance)));
    if (!moved) return;
    this.clusterUse.delete(id);
    if ([...this.clusterUse.values()].some((u) => u.brokers === used.brokers)) return;
    const kafka = this.clusters.get(used.brokers);
    this.clusters.delete(used.brokers);
    await kafka?.close();
  }

  /**
   * Finds the stream cluster of Basic credentials (docs/stream.md, "Stream: credentials"): the password is the token;
   * the user name must be the one issued with it.
   * @throws TenantDenied for missing or wrong credentials, or when the registry cannot be reached
   */
  async authenticate(credentials: Credentials | undefined): Promise<Session> {
    const grant = await this.gate.open('stream', credentials);
    const cluster = grant.resource;
    return { grant, tenant: cluster.tenant, cluster, kafka: this.kafkaOf(cluster) };
  }

  /** `GET /topics`: the cluster's topics and their partition counts. */
  async topics(session: ClusterView): Promise<Record<string, number>> {
    await this.ensureTopics(session);
    const names = Object.keys(session.cluster.topics);
    const counts = await Promise.all(names.map((name) => this.broker(session, () => session.kafka.partitionCount(this.kafkaTopic(session, name)))));
    return Object.fromEntries(names.flatMap((name, i) => (counts[i] === undefined ? [] : [[name, counts[i]]])));
  }

  /**
   * Produces messages in one batch with acks=all (docs/stream.md, "Stream: produce"); partitions left out are chosen by
   * Kafka's default partitioner. Nothing is written when any message names an unknown topic or partition,
   * when one partition's messages have timestamps more than 2^31-1 ms apart from its first, or when one
   * partition's batch is over its topic's `max.message.bytes` (KafkaCluster.produce).
   * @returns each message's Metadata, in request order
   * @throws StreamError 400, 404 or 413 for those cases
   */
  async produce(session: ClusterView, messages: ProduceMessage[]): Promise<ProducedMetadata[]> {
    const counts = await this.partitionCounts(session, messages.map((m) => m.topic));
    const outgoing = messages.map((m): OutgoingMessage => {
      const topic = this.kafkaTopic(session, m.topic);
      const count = counts.get(m.topic) ?? 0;
      if (m.partition !== undefined) checkPartition(m.topic, m.partition, count);
      const partition = m.partition ?? session.kafka.choosePartition(topic, count, m.key);
      return { topic, partition, value: m.value, timestamp: m.timestamp, key: m.key, headers: m.headers };
    });
    const produced = await this.broker(session, () => session.kafka.produce(outgoing));
    this.metrics.countMessages(session.tenant, 'in', produced.length);
    return produced.map((p, i) => ({ topic: messages[i]?.topic ?? '', partition: p.partition, offset: p.offset, timestamp: p.timestamp }));
  }

  /** `/fetch`: messages from each given offset on, with no consumer group (docs/stream.md, "Stream: endpoints"). */
  async fetch(session: ClusterView, request: FetchRequest): Promise<RestMessage[]> {
    const counts = await this.partitionCounts(session, request.partitions.map((p) => p.topic));
    for (const p of request.partitions) checkPartition(p.topic, p.partition, counts.get(p.topic) ?? 0);
    const results = await this.broker(session, () =>
      session.kafka.read(request.partitions.map((p) => ({ ...p, topic: this.kafkaTopic(session, p.topic) })), request.timeoutMs, session.cluster.id),
    );
    const messages = results.flatMap((r, i) => {
      const topic = request.partitions[i]?.topic ?? '';
      for (const message of r.records) message.topic = topic; // the tenant's name for the broker's
      return r.records;
    });
    this.metrics.countMessages(session.tenant, 'out', messages.length);
    return messages;
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
    await this.partitionCounts(session, request.topics);
    for (let attempt = 0; ; attempt++) {
      const holder = await this.holderElsewhere(session, group, name);
      if (holder) {
        const operation = { op: 'consume', group, name, request, headers: consumerHeaders(headers) } as const;
        const forwarded = await this.forward(session, holder, operation, request.timeoutMs + this.config.consumer.joinWaitMs + this.config.kafkaRequestTimeoutMs);
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
    if (created) await Promise.race([instance.consumer.joined, sleep(this.config.consumer.joinWaitMs)]);
    let records: ConsumedRecord[];
    try {
      records = await instance.consumer.poll(request.timeoutMs);
    } catch (error) {
      throw this.kafkaFailure(session, error);
    }
    const prefix = session.cluster.prefix;
    const tenantTopics = new Map<string, string>(); // broker-side name → the tenant's, one slice per topic
    // The records are the Messages, now the instance has handed them over: the tenant's topic name for the broker's.
    for (const r of records) {
      let topic = tenantTopics.get(r.topic);
      if (topic === undefined) tenantTopics.set(r.topic, (topic = r.topic.slice(prefix.length)));
      r.topic = topic;
    }
    this.metrics.countMessages(session.tenant, 'out', records.length);
    return records;
  }

  /**
   * `/commit`: commits the given offsets for the instance's group, or with none what the instance has
   * returned so far (docs/stream.md, "Stream: consumer instances").
   * @throws StreamError 404 for an unknown instance
   */
  async commit(session: ClusterView, group: string, name: string, offsets: TopicPartitionOffset[]): Promise<void> {
    if (offsets.length > 0) {
      const counts = await this.partitionCounts(session, offsets.map((o) => o.topic));
      for (const o of offsets) checkPartition(o.topic, o.partition, counts.get(o.topic) ?? 0);
    }
    const holder = await this.holderElsewhere(session, group, name);
    if (holder && (await this.forward(session, holder, { op: 'commit', group, name, offsets }, this.config.consumer.joinWaitMs + this.config.kafkaRequestTimeoutMs))) return;
    await this.commitHere(session, group, name, offsets);
  }

  /** {@link commit} on this replica (offsets checked already). */
  private async commitHere(session: ClusterView, group: string, name: string, offsets: TopicPartitionOffset[]): Promise<void> {
    const instance = this.existingInstance(session, group, name);
    const mapped = offsets.length === 0 ? undefined : offsets.map((o) => ({ ...o, topic: this.kafkaTopic(session, o.topic) }));
    await this.broker(session, () => instance.consumer.commit(mapped, this.config.consumer.joinWaitMs));
  }

  /**
   * `/committed`: the group's last committed offsets, -1 where there is none.
   * @throws StreamError 400 for a partition the topic does not have (as fetch, commit and offsets)
   */
  async committed(session: ClusterView, group: string, partitions: TopicPartition[], timeoutMs: number): Promise<TopicPartitionOffset[]> {
    const counts = await this.partitionCounts(session, partitions.map((p) => p.topic));
    for (const p of partitions) checkPartition(p.topic, p.partition, counts.get(p.topic) ?? 0);
    const mapped = partitions.map((p) => ({ ...p, topic: this.kafkaTopic(session, p.topic) }));
    const offsets = await this.broker(session, () => withTimeout(session.kafka.committed(this.kafkaGroup(session, group), mapped), timeoutMs));
    return offsets.map((o, i) => ({ ...o, topic: partitions[i]?.topic ?? '' }));
  }

  /** `/offsets/<at>`: per partition, the earliest offset at or after a timestamp, or the log start or end. */
  async offsets(session: ClusterView, at: OffsetsAt, partitions: TopicPartition[], timeoutMs: number): Promise<TopicPartitionOffset[]> {
    const counts = await this.partitionCounts(session, partitions.map((p) => p.topic));
    for (const p of partitions) checkPartition(p.topic, p.partition, counts.get(p.topic) ?? 0);
    const mapped = partitions.map((p) => ({ ...p, topic: this.kafkaTopic(session, p.topic) }));
    const offsets = await this.broker(session, () => withTimeout(session.kafka.offsets(mapped, at), timeoutMs));
    return offsets.map((o, i) => ({ ...o, topic: partitions[i]?.topic ?? '' }));
  }

  /**
   * `GET /consumers`: the cluster's consumer instances on every gateway replica and their assignments (a replica
   * that does not answer within 5 s is left out).
   */
  async consumers(session: ClusterView): Promise<GroupAssignments[]> {
    const others = await this.directoryCall(session, (d) => d.otherHolders(session.cluster.id));
    const lists = await Promise.all(
      others.map((replica) =>
        this.peers
          .call(replica, session.cluster.id, { op: 'list' }, 5000)
          .then((answer) => (answer.kind === 'value' ? (answer.value as GroupAssignments[]) : []))
          .catch(() => []),
      ),
    );
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
    if (holder && (await this.forward(session, holder, { op: 'delete', group, name }, this.config.consumer.joinWaitMs + this.config.kafkaRequestTimeoutMs))) return;
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
    if (call.boot !== this.boot) throw new PeerGoneError();
    let cluster: StreamClusterRecord | null;
    try {
      cluster = await this.registry.streamCluster(call.cluster);
    } catch {
      throw new StreamError(503, 'Service unavailable: the tenant registry cannot be reached');
    }
    if (!cluster) {
      // Missing from a registry being written again (the control Redis restarted empty) is not gone.
      const complete = await this.registry.complete().catch(() => false);
      throw complete ? new StreamError(404, 'The stream cluster is not in the registry any more') : new StreamError(503, 'Service unavailable: the tenant registry cannot be reached');
    }
    const view: ClusterView = { tenant: cluster.tenant, cluster, kafka: this.kafkaOf(cluster) };
    switch (call.op) {
      case 'consume':
        await this.partitionCounts(view, call.request.topics);
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
    const claim = await this.directoryCall(session, (d) => d.claim(session.cluster.id, group, name, limit));
    if (claim.kind === 'limit') throw StreamError.badRequest(`Illegal argument: at most ${limit} consumer instances (the partition count of all topics) may be open`);
    if (claim.kind === 'held') throw new HeldElsewhereError();
    try {
      return await this.startInstance(session, group, name, topics, config);
    } catch (error) {
      await this.openedDirectory?.release(session.cluster.id, group, name).catch(() => undefined);
      throw error;
    }
  }

  private async startInstance(session: ClusterView, group: string, name: string, topics: string[], config: ConsumerConfig): Promise<ConsumerInstance> {
    const { cluster, tenant } = session;
    const groupId = this.kafkaGroup(session, group);
    const kafkaTopics = topics.map((t) => this.kafkaTopic(session, t));
    if (config.autoOffsetReset === 'none') {
      const partitions = await this.allPartitions(session, topics);
      const committed = await this.broker(session, () => session.kafka.committed(groupId, partitions.map((p) => ({ ...p, topic: this.kafkaTopic(session, p.topic) }))));
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
      sessionTimeoutMs: this.config.consumer.sessionTimeoutMs,
      maxWaitMs: this.config.consumer.maxWaitMs,
      maxBufferedRecords: this.config.consumer.maxBufferedRecords,
      maxBufferedBytes: this.config.consumer.maxBufferedBytes,
      onError: engineErrorListener(this.logger, 'kafka', { tenant, cluster: cluster.id, group, instance: name }),
    });
    try {
      await consumer.start();
    } catch (error) {
      await consumer.close().catch(() => undefined);
      throw this.kafkaFailure(session, error);
    }
    this.metrics.instanceOpened(tenant, 1);
    return { tenant, clusterId: cluster.id, group, name, topics, consumer };
  }

  /** Closes an instance this replica removed from its own, and deletes its directory entry if this replica still holds it. */
  private async closeInstance(instance: ConsumerInstance): Promise<void> {
    this.metrics.instanceOpened(instance.tenant, -1);
    await Promise.all([
      instance.consumer.close().catch((error: unknown) => logEvent(this.logger, 'warn', 'consumer.close-failed', { engine: 'kafka', ...instanceFields(instance), error })),
      this.openedDirectory?.release(instance.clusterId, instance.group, instance.name).catch(() => undefined),
    ]);
  }

  /** Every partition of the topics, as tenant-named TopicPartitions. */
  private async allPartitions(session: ClusterView, topics: string[]): Promise<TopicPartition[]> {
    const counts = await this.partitionCounts(session, topics);
    return topics.flatMap((topic) => Array.from({ length: counts.get(topic) ?? 0 }, (_, partition) => ({ topic, partition })));
  }

  /**
   * Partition counts of tenant topics, creating the cluster's declared topics on first use.
   * @throws StreamError 404 for a topic the cluster does not declare
   */
  private async partitionCounts(session: ClusterView, topics: string[]): Promise<Map<string, number>> {
    const unknown = topics.find((t) => !Object.hasOwn(session.cluster.topics, t));
    if (unknown !== undefined) throw new StreamError(404, `Topic '${unknown}' does not exist`);
    await this.ensureTopics(session);
    const unique = [...new Set(topics)];
    const counts = await Promise.all(unique.map((t) => this.broker(session, () => session.kafka.partitionCount(this.kafkaTopic(session, t)))));
    return new Map(unique.map((t, i) => [t, counts[i] ?? 0]));
  }

  /** Creates the cluster's declared topics once per registry record (a changed record checks again). */
  private ensureTopics(session: ClusterView): Promise<void> {
    const { cluster } = session;
    let ready = this.topicsReady.get(cluster);
    if (!ready) {
      const wanted = Object.fromEntries(Object.entries(cluster.topics).map(([name, count]) => [this.kafkaTopic(session, name), count]));
      ready = this.broker(session, () => session.kafka.ensureTopics(wanted));
      this.topicsReady.set(cluster, ready);
      ready.catch(() => this.topicsReady.delete(cluster));
    }
    return ready;
  }

  private kafkaTopic(session: ClusterView, topic: string): string {
    return `${session.cluster.prefix}${topic}`;
  }

  private kafkaGroup(session: ClusterView, group: string): string {
    return `${session.cluster.prefix}${group}`;
  }

  /**
   * The Kafka clients of a broker list, shared by every cluster record that names the same brokers;
   * looked up once per record (the registry cache hands out the same object until it changes).
   */
  private kafkaOf(cluster: StreamClusterRecord): KafkaCluster {
    const known = this.clustersByRecord.get(cluster);
    if (known) return known;
    const key = cluster.brokers.join(',');
    let kafka = this.clusters.get(key);
    if (!kafka) {
      kafka = new KafkaCluster({
        brokers: cluster.brokers,
        clientId: 'restash-stream-gateway',
        requestTimeoutMs: this.config.kafkaRequestTimeoutMs,
      });
      this.clusters.set(key, kafka);
    }
    this.clustersByRecord.set(cluster, kafka);
    this.clusterUse.set(cluster.id, { brokers: key, prefix: cluster.prefix });
    return kafka;
  }

  /** Runs a Kafka call, turning its failures into the API's errors. */
  private async broker<T>(session: ClusterView, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw this.kafkaFailure(session, error);
    }
  }

  private kafkaFailure(session: ClusterView, error: unknown): StreamError {
    if (error instanceof StreamError) return error;
    if (error instanceof ProduceRefusedError) return produceRefused(error, session.cluster.prefix);
    const type = kafkaErrorCode(error);
    const message = error instanceof Error ? error.message : String(error);
    // The broker refusing what the client sent (e.g. under stricter broker settings than the gateway checks) is a client error.
    if (REFUSED_RECORD.has(type)) return StreamError.badRequest(`Illegal argument: the broker refused a message (${type}): ${stripPrefix(message, session.cluster.prefix)}`);
    if (TOO_LARGE.has(type)) return new StreamError(413, `Request too large: the broker refused the messages (${type})`);
    if (type === 'UNKNOWN_TOPIC_OR_PARTITION') return new StreamError(404, `Unknown topic or partition: ${stripPrefix(message, session.cluster.prefix)}`);
    if (GROUP_BUSY.has(type)) return new StreamError(409, `The consumer group is rebalancing, retry: ${message}`);
    if (message.startsWith('the consumer instance has not joined')) return new StreamError(409, message);
    this.metrics.backendError(session.tenant, 'broker');
    this.repeats.logEvent(this.logger, 'warn', 'engine.call-failed', { engine: 'kafka', tenant: session.tenant, cluster: session.cluster.id, error });
    return new StreamError(503, 'Service unavailable: Kafka cannot be reached');
  }
}

/** @throws StreamError 400 when the topic has no such partition */
function checkPartition(topic: string, partition: number, count: number): void {
  if (partition >= count) throw StreamError.badRequest(`Illegal argument: topic '${topic}' has ${count} partition(s), there is no partition ${partition}`);
}

/**
 * The API's answer to a produce refused before anything was written (docs/stream.md, "Stream: produce"): 400
 * naming the message whose timestamp lies too far from its partition's first, 413 for a partition's
 * batch over its topic's `max.message.bytes`.
 */
function produceRefused(error: ProduceRefusedError, prefix: string): StreamError {
  const text = stripPrefix(error.message, prefix);
  if (error.reason === 'too-large') return new StreamError(413, `Request too large: ${text}; nothing was written`);
  return StreamError.badRequest(
    `Illegal argument: message[${error.index}].${text} (message[${error.firstIndex}]): the messages to one partition in one request must have timestamps within 2^31-1 ms (about 24.8 days) of the first one's; nothing was written, send such messages in separate requests`,
  );
}

function stripPrefix(message: string, prefix: string): string {
  return message.split(prefix).join('');
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** @throws StreamError 504 when the promise takes longer than `ms` */
async function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new StreamError(504, `Timed out after ${ms} ms waiting for the offsets`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
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
