import { type StreamClusterRecord, registryKeys } from '@restash/shared/data-access-registry';
import { StreamBackendCalls } from './backend-calls';
import { ClusterTopics } from './cluster-topics';
import { ConsumerService } from './consumer.service';
import { InstanceLocator } from './instance-locator';
import { KafkaClients } from './kafka-clients';
import type {
  ControlConnection,
  DirectoryOpener,
  KafkaFactory,
  PeerPort,
  StreamCredentials,
  StreamGrant,
  StreamLimits,
  StreamObserver,
  StreamRegistry,
  StreamSession,
} from './ports';
import { StreamService } from './stream.service';

/** Registry keys of stream cluster records, followed by the cluster id. */
const STREAM_CLUSTER_KEY = registryKeys.streamCluster('');

/** What StreamSessions is made of: its ports (ports.ts) and limits. */
export interface StreamSessionsDeps<G extends StreamGrant> {
  /**
   * The tenant gate's grant of Basic credentials (TenantGate.open('stream')).
   * @throws TenantDenied for missing or wrong credentials, or when the registry cannot be reached
   */
  openGrant: (credentials: StreamCredentials | undefined) => Promise<G>;
  registry: StreamRegistry;
  kafka: KafkaFactory;
  openDirectory: DirectoryOpener;
  peers: PeerPort;
  /** The control Redis connection the instance directory is on (its `close` and `ready` events). */
  control: ControlConnection;
  observer: StreamObserver;
  limits: StreamLimits;
  /** This start of this replica, as peers and the instance directory know it (default: a new UUID). */
  boot?: string;
}

/**
 * The Stream REST API (docs/stream.md, "What the Stream API does") between HTTP and Kafka:
 * opens the cluster of Basic credentials through the tenant gate, maps the tenant's topic and group
 * names onto the broker's prefixed ones and back, and runs each operation on the cluster's Kafka
 * clients: {@link service}'s (topics, produce, fetch, committed, offsets) and {@link consumers}' (consumer
 * instances across replicas). Drops what this replica holds for a cluster whose registry record changes.
 * Admission, encoding and HTTP stay in the app's routes (apps/stream-gateway, StreamRoutes).
 *
 * Operations throw StreamError: 400 for malformed or illegal arguments, 401/403 for
 * credentials, 404 for unknown topics and consumer instances, 409 while a group rebalances, 413/429
 * for limits, 503 when Kafka or the control Redis cannot be reached, 504 when offsets take too long
 * (credentials, the daily limit and the registry are the tenant gate's TenantDenied, answered by the routes).
 */
export class StreamSessions<G extends StreamGrant = StreamGrant> {
  /** Topics, produce, fetch, committed and offsets. */
  readonly service: StreamService;
  /** Consumer instances: consume, commit, delete, list, and the operations other replicas forward here. */
  readonly consumers: ConsumerService;
  private readonly clients: KafkaClients;
  private readonly locator: InstanceLocator;

  constructor(private readonly deps: StreamSessionsDeps<G>) {
    const calls = new StreamBackendCalls(deps.observer);
    const topics = new ClusterTopics(calls);
    this.clients = new KafkaClients(deps.kafka);
    this.locator = new InstanceLocator({ openDirectory: deps.openDirectory, peers: deps.peers, registry: deps.registry, control: deps.control, calls, boot: deps.boot });
    this.service = new StreamService(topics, calls, deps.observer);
    this.consumers = new ConsumerService({ topics, calls, locator: this.locator, kafka: this.clients, registry: deps.registry, observer: deps.observer, limits: deps.limits });
  }

  /** This start of this replica, as peers and the instance directory know it. */
  get boot(): string {
    return this.locator.boot;
  }

  /** Follows registry changes and starts the consumer instances' background work: call once at start. */
  start(): void {
    // Any replica's registry write: what this gateway holds for the cluster must not outlive the change.
    this.deps.registry.onChange((key) => {
      if (key.startsWith(STREAM_CLUSTER_KEY)) void this.recheckCluster(key.slice(STREAM_CLUSTER_KEY.length));
    });
    this.consumers.start();
  }

  /** Closes every consumer instance (committing delivered offsets where auto commit is on, deleting their directory entries), then the clients. */
  async close(): Promise<void> {
    await this.consumers.close();
    await this.clients.close();
    await this.locator.close();
  }

  /**
   * Finds the stream cluster of Basic credentials (docs/stream.md, "Stream: credentials"): the password is the token;
   * the user name must be the one issued with it.
   * @throws TenantDenied for missing or wrong credentials, or when the registry cannot be reached
   */
  async authenticate(credentials: StreamCredentials | undefined): Promise<StreamSession<G>> {
    const grant = await this.deps.openGrant(credentials);
    const cluster = grant.resource;
    return { grant, tenant: cluster.tenant, cluster, kafka: this.clients.of(cluster) };
  }

  /**
   * A stream cluster's record was written or deleted. When it is gone, or names other brokers or another
   * prefix, its consumer instances are closed and its Kafka clients too unless another cluster on the
   * same brokers uses them; when it no longer declares a topic, the instances subscribed to it are closed.
   * Cached records were dropped by the registry reader already. While the registry cannot be read,
   * everything is kept.
   */
  private async recheckCluster(id: string): Promise<void> {
    const used = this.clients.use(id);
    if (!used) return;
    let record: StreamClusterRecord | null;
    try {
      record = await this.deps.registry.streamCluster(id);
      // A registry being written again (the control Redis restarted empty) lacks the record for a while: not deleted.
      if (!record && !(await this.deps.registry.complete())) return;
    } catch {
      return;
    }
    const moved = !record || record.brokers.join(',') !== used.brokers || record.prefix !== used.prefix;
    await this.consumers.closeStale(id, moved, record?.topics ?? {}, record ? 'cluster-changed' : 'cluster-removed');
    if (moved) await this.clients.release(id, used);
  }
}
