import type { StreamClusterRecord } from '@restash/shared/data-access-registry';
import type { GroupConsumerOptions, OutgoingMessage, ProducedMetadata, ReadPosition, ReadResult } from '@restash/stream/data-access-kafka';
import type { OffsetsAt, RestMessage, TopicPartition, TopicPartitionOffset } from '@restash/stream/util-rest';
import type { Claim, Holder, Replica } from '../instance-directory';
import type { PeerAnswer, PeerCall, PeerOperation } from '../peer-client';
import type { ControlConnection, InstanceConsumer, InstanceDirectoryPort, PeerPort, StreamGrant, StreamKafka, StreamObserver, StreamRegistry } from '../ports';

/**
 * In-memory fakes of the feature's ports (ports.ts) for unit tests. Kafka's group coordination, the client library's
 * errors and the instance directory's Lua scripts are the real engines', tested against Kafka and Redis by
 * apps/stream-gateway's and libs/stream/data-access-kafka's integration tests.
 */

/** A stream cluster record of tenant `acme`: topic `orders` with 2 partitions, `audit` with 1, broker-side prefix `acme.events.`. */
export function clusterRecord(overrides: Partial<StreamClusterRecord> = {}): StreamClusterRecord {
  return {
    id: 'acme.events',
    tenant: 'acme',
    name: 'events',
    brokers: ['kafka-a:9092'],
    prefix: 'acme.events.',
    topics: { orders: 2, audit: 1 },
    maxRequestBytes: 1024 * 1024,
    dailyRequestLimit: 0,
    ...overrides,
  };
}

/** The grant the fake gate hands out for a record. */
export const grant = (record: StreamClusterRecord): StreamGrant & { token: string } => ({ tenant: record.tenant, resource: record, token: 'token' });

/** Kafka error carrying a code where kafkaErrorCode finds it (a ProtocolError's `apiId`). */
export const kafkaError = (code: string, message = code): Error => Object.assign(new Error(message), { apiId: code });

/** A member of a consumer group over FakeKafka's logs: assigned every partition of its topics, polls what is new since it last did. */
export class FakeConsumer implements InstanceConsumer {
  assignment: Record<string, number[]> = {};
  readonly joined = Promise.resolve();
  failure: Error | undefined;
  lastUsedAt = Date.now();
  started = false;
  closed = false;
  readonly commits: Array<TopicPartitionOffset[] | undefined> = [];
  /** Next offset to hand out, by `topic:partition`. */
  private readonly positions = new Map<string, number>();

  constructor(
    private readonly kafka: FakeKafka,
    readonly options: Omit<GroupConsumerOptions, 'client'>,
  ) {}

  async start(): Promise<void> {
    this.kafka.check();
    for (const topic of this.options.topics) this.assignment[topic] = (this.kafka.logs.get(topic) ?? []).map((_, partition) => partition);
    this.started = true;
  }

  async poll(_timeoutMs: number): Promise<RestMessage[]> {
    this.lastUsedAt = Date.now();
    if (this.failure) throw this.failure;
    const out: RestMessage[] = [];
    for (const [topic, partitions] of Object.entries(this.assignment)) {
      for (const partition of partitions) {
        const log = this.kafka.logs.get(topic)?.[partition] ?? [];
        const from = this.positions.get(`${topic}:${partition}`) ?? 0;
        out.push(...log.slice(from).map((m) => ({ ...m })));
        this.positions.set(`${topic}:${partition}`, log.length);
      }
    }
    return out;
  }

  async commit(offsets: TopicPartitionOffset[] | undefined, _joinWaitMs: number): Promise<void> {
    this.kafka.check();
    this.commits.push(offsets);
    const delivered = [...this.positions].map(([key, offset]) => ({ topic: key.slice(0, key.lastIndexOf(':')), partition: Number(key.slice(key.lastIndexOf(':') + 1)), offset }));
    for (const o of offsets ?? delivered) this.kafka.committedOffsets.set(`${this.options.groupId}|${o.topic}|${o.partition}`, o.offset);
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}

/** One broker list's topics as arrays of partition logs, broker-side names. Set `down` to make every call fail as an unreachable Kafka does. */
export class FakeKafka implements StreamKafka {
  readonly logs = new Map<string, RestMessage[][]>();
  /** `group|topic|partition` → committed offset. */
  readonly committedOffsets = new Map<string, number>();
  readonly consumers: FakeConsumer[] = [];
  down: Error | undefined;
  closed = false;

  /** @throws {@link down} when set */
  check(): void {
    if (this.down) throw this.down;
  }

  async ensureTopics(topics: Record<string, number>): Promise<void> {
    this.check();
    for (const [topic, count] of Object.entries(topics)) if (!this.logs.has(topic)) this.logs.set(topic, Array.from({ length: count }, () => []));
  }

  async partitionCount(topic: string): Promise<number | undefined> {
    this.check();
    return this.logs.get(topic)?.length;
  }

  choosePartition(_topic: string, partitionCount: number, key: string | undefined): number {
    return key === undefined ? 0 : key.length % partitionCount;
  }

  async produce(messages: OutgoingMessage[]): Promise<ProducedMetadata[]> {
    this.check();
    return messages.map((m) => {
      const log = this.logs.get(m.topic)?.[m.partition];
      if (!log) throw kafkaError('UNKNOWN_TOPIC_OR_PARTITION', `no partition ${m.partition} of ${m.topic}`);
      const timestamp = m.timestamp ?? 1_700_000_000_000;
      log.push({ topic: m.topic, partition: m.partition, offset: log.length, timestamp, key: m.key ?? '', value: m.value, headers: m.headers });
      return { topic: m.topic, partition: m.partition, offset: log.length - 1, timestamp };
    });
  }

  async read(positions: ReadPosition[], _maxWaitMs: number): Promise<ReadResult[]> {
    this.check();
    return positions.map((p) => ({ ...p, records: (this.logs.get(p.topic)?.[p.partition] ?? []).slice(p.offset).map((m) => ({ ...m })) }));
  }

  async offsets(partitions: TopicPartition[], at: OffsetsAt): Promise<TopicPartitionOffset[]> {
    this.check();
    return partitions.map((p) => {
      const log = this.logs.get(p.topic)?.[p.partition] ?? [];
      const offset = at === 'earliest' ? 0 : at === 'latest' ? log.length : (log.find((m) => m.timestamp >= at.timestamp)?.offset ?? log.length);
      return { ...p, offset };
    });
  }

  async committed(groupId: string, partitions: TopicPartition[]): Promise<TopicPartitionOffset[]> {
    this.check();
    return partitions.map((p) => ({ ...p, offset: this.committedOffsets.get(`${groupId}|${p.topic}|${p.partition}`) ?? -1 }));
  }

  consumer(options: Omit<GroupConsumerOptions, 'client'>): FakeConsumer {
    const consumer = new FakeConsumer(this, options);
    this.consumers.push(consumer);
    return consumer;
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}

/**
 * The instance directory of every replica in one map, as the control Redis holds it for all of them. `open` is a
 * DirectoryOpener; set `down` to make every call fail as an unreachable control Redis does.
 */
export class FakeDirectories {
  /** `cluster|[group,name]` → the holder's entry. */
  readonly entries = new Map<string, Holder>();
  down: Error | undefined;

  /** A replica's directory, its peer URL `http://<boot>`. */
  open(boot: string, leaseMs: number): InstanceDirectoryPort & { self: Replica } {
    const self = { boot, peer: `http://${boot}` };
    const entries = this.entries;
    const check = () => {
      if (this.down) throw this.down;
    };
    const key = (clusterId: string, group: string, name: string) => `${clusterId}|${JSON.stringify([group, name])}`;
    const live = (holder: Holder | undefined, now: number) => (holder && holder.expires > now ? holder : undefined);
    return {
      self,
      async claim(clusterId, group, name, limit, now = Date.now()): Promise<Claim> {
        check();
        const current = live(entries.get(key(clusterId, group, name)), now);
        if (current && current.boot !== boot) return { kind: 'held', holder: current };
        if (limit >= 0 && !current) {
          const others = [...entries].filter(([k, h]) => k.startsWith(`${clusterId}|`) && k !== key(clusterId, group, name) && live(h, now));
          if (others.length >= limit) return { kind: 'limit' };
        }
        entries.set(key(clusterId, group, name), { ...self, expires: now + leaseMs });
        return { kind: 'claimed' };
      },
      async holderElsewhere(clusterId, group, name, now = Date.now()) {
        check();
        const holder = live(entries.get(key(clusterId, group, name)), now);
        return holder && holder.boot !== boot ? holder : undefined;
      },
      async release(clusterId, group, name, owner = boot) {
        check();
        if (entries.get(key(clusterId, group, name))?.boot === owner) entries.delete(key(clusterId, group, name));
      },
      async otherHolders(clusterId, now = Date.now()) {
        check();
        const replicas = new Map<string, Replica>();
        for (const [k, h] of entries) if (k.startsWith(`${clusterId}|`) && live(h, now) && h.boot !== boot) replicas.set(h.boot, { boot: h.boot, peer: h.peer });
        return [...replicas.values()];
      },
    };
  }
}

/**
 * Peers reached in this process: a call to a replica registered under its boot id runs its `servePeer` (the value
 * through JSON, as on the wire); any other replica is gone. Every call is recorded.
 */
export class FakePeers implements PeerPort {
  readonly replicas = new Map<string, { servePeer(call: PeerCall): Promise<unknown> }>();
  readonly calls: Array<{ to: Replica; clusterId: string; operation: PeerOperation; waitMs: number }> = [];
  closed = false;

  async call(to: Replica, clusterId: string, operation: PeerOperation, waitMs: number): Promise<PeerAnswer> {
    this.calls.push({ to, clusterId, operation, waitMs });
    const replica = this.replicas.get(to.boot);
    if (!replica) return { kind: 'gone' };
    const value = await replica.servePeer(JSON.parse(JSON.stringify({ ...operation, boot: to.boot, cluster: clusterId })) as PeerCall);
    return { kind: 'value', value: JSON.parse(JSON.stringify(value ?? null)) as unknown };
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}

/** The registry's stream cluster records; `whole` false: being written again. `announce` runs the change listeners. */
export class FakeRegistry implements StreamRegistry {
  readonly records = new Map<string, StreamClusterRecord>();
  readonly listeners: Array<(key: string) => void> = [];
  whole = true;

  constructor(...records: StreamClusterRecord[]) {
    for (const record of records) this.records.set(record.id, record);
  }

  async streamCluster(id: string): Promise<StreamClusterRecord | null> {
    return this.records.get(id) ?? null;
  }

  async complete(): Promise<boolean> {
    return this.whole;
  }

  onChange(listener: (key: string) => void): void {
    this.listeners.push(listener);
  }

  announce(key: string): void {
    for (const listener of this.listeners) listener(key);
  }
}

/** The control Redis's connection events, emitted by the test. */
export class FakeControl implements ControlConnection {
  readonly listeners = new Map<string, Array<() => void>>();

  on(event: 'close' | 'ready', listener: () => void): this {
    this.listeners.set(event, [...(this.listeners.get(event) ?? []), listener]);
    return this;
  }

  emit(event: 'close' | 'ready'): void {
    for (const listener of this.listeners.get(event) ?? []) listener();
  }
}

/** Records what the feature counts. */
export class RecordingObserver implements StreamObserver {
  readonly backendErrors: Array<[string, 'broker' | 'registry']> = [];
  readonly messages = { in: 0, out: 0 };
  /** Open consumer instances by tenant. */
  readonly instances = new Map<string, number>();

  backendError(tenant: string, kind: 'broker' | 'registry'): void {
    this.backendErrors.push([tenant, kind]);
  }

  countMessages(_tenant: string, direction: 'in' | 'out', count: number): void {
    this.messages[direction] += count;
  }

  instanceOpened(tenant: string, delta: 1 | -1): void {
    this.instances.set(tenant, (this.instances.get(tenant) ?? 0) + delta);
  }
}
