import type { RegistryReader, StreamClusterRecord } from '@restash/shared/data-access-registry';
import type { GroupConsumer, GroupConsumerOptions, KafkaCluster } from '@restash/stream/data-access-kafka';
import type { InstanceDirectory } from './instance-directory';
import type { PeerClient } from './peer-client';

/**
 * The ports of the Stream API's logic (docs/stream.md, "What the Stream API does"): what StreamSessions, StreamService
 * and ConsumerService need from the world, injected by apps/stream-gateway/src/app.module.ts and faked in unit tests
 * (src/testing/fakes.ts).
 */

/** The topic side of a broker list's Kafka clients (KafkaCluster): the declared topics created, partition counts. */
export type TopicAdmin = Pick<KafkaCluster, 'ensureTopics' | 'partitionCount'>;

/**
 * One consumer instance's member of its Kafka consumer group (GroupConsumer of libs/stream/data-access-kafka):
 * started once, polled and committed by requests, closed by its holder.
 */
export type InstanceConsumer = Pick<GroupConsumer, 'assignment' | 'joined' | 'failure' | 'lastUsedAt' | 'start' | 'poll' | 'commit' | 'close'>;

/**
 * The Kafka clients of one broker list (KafkaCluster of libs/stream/data-access-kafka): topics, produce (acks=all),
 * group-less reads, offsets, committed offsets, and new group consumers. Every call names broker-side topics and
 * groups (the cluster's prefix included) and throws the client library's errors (kafkaErrorCode reads their code).
 */
export interface StreamKafka extends TopicAdmin, Pick<KafkaCluster, 'choosePartition' | 'produce' | 'read' | 'offsets' | 'committed' | 'close'> {
  /** A new, not yet started, member of a consumer group (KafkaCluster.consumer). */
  consumer(options: Omit<GroupConsumerOptions, 'client'>): InstanceConsumer;
}

/** Opens the Kafka clients of a broker list (`host:port` each), once per distinct list; closed by StreamSessions. */
export type KafkaFactory = (brokers: string[]) => StreamKafka;

/** The registry as the Stream API reads it (RegistryReader): stream cluster records, whether it is whole, change announcements. */
export type StreamRegistry = Pick<RegistryReader, 'streamCluster' | 'complete' | 'onChange'>;

/**
 * Which replica holds each consumer instance (docs/stream.md, "Stream: consumer instances"): InstanceDirectory in the
 * control Redis. Every method throws the control Redis's connection errors.
 */
export type InstanceDirectoryPort = Pick<InstanceDirectory, 'claim' | 'holderElsewhere' | 'release' | 'otherHolders'>;

/**
 * Opens the instance directory for this replica, started as `boot` (a UUID, new each start), whose entries live
 * `leaseMs` ms without renewal. Called once, on the first request that needs it: the app knows this replica's
 * address (the bound API port) only once it listens.
 */
export type DirectoryOpener = (boot: string, leaseMs: number) => InstanceDirectoryPort;

/**
 * How a replica calls the replica holding a consumer instance (PeerClient over HTTP): `call` answers the holder's
 * value or `gone`, and throws StreamError with the holder's own error or 503 when it stopped answering.
 */
export type PeerPort = Pick<PeerClient, 'call' | 'close'>;

/** The control Redis's connection events (ioredis emits `close` when the connection is lost, `ready` when it is back). */
export interface ControlConnection {
  on(event: 'close' | 'ready', listener: () => void): unknown;
}

/** Where messages, consumer instances and backend failures are counted (the app's Prometheus metrics, StreamMetrics). */
export interface StreamObserver {
  /** One failed call of a tenant's request to Kafka (`broker`) or to the control Redis (`registry`). */
  backendError(tenant: string, kind: 'broker' | 'registry'): void;
  /** Messages produced (`in`) or returned by fetch and consume (`out`); `count` may be 0. */
  countMessages(tenant: string, direction: 'in' | 'out', count: number): void;
  /** A consumer instance opened (+1) or closed (-1) on this replica. */
  instanceOpened(tenant: string, delta: 1 | -1): void;
}

/** The timeouts and buffers of Kafka calls and consumer instances (StreamGatewayConfig; every duration in ms). */
export interface StreamLimits {
  /** A broker request unanswered this long fails with 503 (KAFKA_REQUEST_TIMEOUT_MS). */
  kafkaRequestTimeoutMs: number;
  consumer: {
    /** An instance with no request for this long is closed (CONSUMER_IDLE_TIMEOUT_MS). */
    idleTimeoutMs: number;
    /** Kafka session (and rebalance) timeout of instances (CONSUMER_SESSION_TIMEOUT_MS). */
    sessionTimeoutMs: number;
    /** How long an instance's broker fetch waits for data when idle (CONSUMER_MAX_WAIT_MS). */
    maxWaitMs: number;
    /** An instance stops fetching while this many records wait for its client (CONSUMER_MAX_BUFFERED_RECORDS). */
    maxBufferedRecords: number;
    /** An instance stops fetching while its waiting records hold this many bytes (CONSUMER_MAX_BUFFERED_BYTES). */
    maxBufferedBytes: number;
    /** The request that creates an instance waits this long for the group to assign partitions (CONSUMER_JOIN_WAIT_MS). */
    joinWaitMs: number;
  };
}

/** What an operation needs of a request: its tenant, its stream cluster's record and the cluster's Kafka clients. */
export interface ClusterView {
  tenant: string;
  cluster: StreamClusterRecord;
  kafka: StreamKafka;
}

/** What the tenant gate grants Basic credentials (TenantGate.open('stream'): Grant<'stream'>), as far as this library reads it. */
export interface StreamGrant {
  tenant: string;
  resource: StreamClusterRecord;
}

/** An authenticated request's view of its stream cluster. */
export interface StreamSession<G extends StreamGrant = StreamGrant> extends ClusterView {
  grant: G;
}

/** Basic credentials as the tenant gate reads them (feature-tenancy's Credentials): the password is the token. */
export interface StreamCredentials {
  token: string;
  username?: string;
}

/** Request headers with lower-case names (Node's IncomingHttpHeaders). */
export type Headers = Record<string, string | string[] | undefined>;

/** Spec 002's GroupAssignments, as `GET /consumers` lists them (docs/stream.md, "Stream: endpoints"). */
export interface GroupAssignments {
  name: string;
  instances: Array<{ name: string; topics: Array<{ topic: string; partitions: number[] }> }>;
}
