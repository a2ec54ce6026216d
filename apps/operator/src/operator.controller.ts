// The operator's control loop (OperatorController): leader election, the informers, the work queue and the loops
// beside it. Its registry check and the registry's announcements are in registry-healing.ts, its logger in operator-log.ts.
import { type BeforeApplicationShutdown, Inject, Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import type { KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import {
  EventRecorder,
  KubernetesClient,
  LeaderElector,
  type ResourceWatch,
  watchResources,
} from '@restash/operator/data-access-kubernetes';
import { WorkQueue } from '@restash/operator/util-controller';
import { TenantReconciler, type TenantRegistry, type EngineAdmin } from '@restash/platform/feature-reconcile';
import { GROUP, KIND_NAMES, KINDS, type KindName, type KvDatabase, type RestashResource, VERSION } from '@restash/shared/util-resources';
import { BackupController, type BackupEngines } from '@restash/kv/feature-backup';
import { Readiness, logEvent } from '@restash/shared/util-http';
import { RegistryReader, kvDatabaseId } from '@restash/shared/data-access-registry';
import { OPERATOR_CONFIG, type OperatorConfig } from './config';
import { kubeAccess } from './kube-access';
import { OperatorMetrics } from './operator-metrics';
import { BACKUP_ENGINES, ENGINE_ADMIN, KUBERNETES_CLIENT, TENANT_REGISTRY } from './tokens';
import { BackupLoop } from './backup-loop';
import { ReplicationLoop, plannedFailover, probeReplication } from './replication-loop';
import { replicationKube } from './replication-kube';
import { backupKube } from './backup-kube';
import { loggable, logger } from './operator-log';
import { RegistryHealing, onRegistryChange } from './registry-healing';

/**
 * The operator's control loop (issue 13, "The operator"): after winning the leader Lease (or at once without
 * leader election), one informer per kind (list + watch, restarted with backoff, periodic resync) turns every
 * event into its namespace (the tenant) on a keyed work queue; the {@link TenantReconciler} reconciles a
 * namespace at a time per key, with per-key exponential backoff on failure. Losing the Lease exits the process
 * (the pod restarts and stands by), as Strimzi's operators do. Shutdown stops the watches, waits for running
 * passes and releases the Lease.
 *
 * `/readyz` checks `kubernetes`: the informers have listed everything (a standby replica is ready: it serves
 * health and metrics and waits for the Lease).
 *
 * The registry heals itself (docs/architecture.md, "Architecture: tenant registry"): every second the leader looks for the
 * registry's marker. When the control Redis does not answer within 1 s, every resource is marked
 * `Ready=False`/`RegistryUnavailable` at once, and every namespace is queued when it answers again; when it
 * answers without the marker (restarted empty, wiped), every namespace is marked the same way and queued at once, and
 * once each has had a pass that wrote it, the marker is written again, so that the gateways answer unknown tokens 401 again and the
 * others are served (503 meanwhile, never 401).
 *
 * The registry's change announcements (RegistryReader.onChange) are watched too: when a queue project's record
 * holds other signing keys than its Secret was written with (`POST /v2/keys/rotate`), its namespace is queued at
 * once, so the Secret follows a rotation without waiting for the periodic resync (docs/queue.md, "Queue: signing-key
 * rotation").
 *
 * Backups run beside (BackupLoop, kv-feature-backup's BackupController): KvBackups on a work queue of their own, and
 * each KvDatabase's schedule looked at when it changes and at its next time (docs/operations.md, "KV databases: backups and
 * restore"); each replicated KvDatabase's servers are looked at every 10 s (ReplicationLoop: primary, replicas,
 * `Degraded`).
 */
@Injectable()
export class OperatorController implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly client: KubernetesClient;
  private watches = new Map<KindName, ResourceWatch<KubernetesObject>>();
  private queue: WorkQueue<string> | undefined;
  private elector: LeaderElector | undefined;
  private depthTimer: NodeJS.Timeout | undefined;
  /** The registry check (RegistryHealing): marks, requeues and rewrites when the control Redis fails or loses the registry. */
  private healing: RegistryHealing | undefined;
  private backups: BackupLoop | undefined;
  private replication: ReplicationLoop | undefined;
  private stopping = false;

  constructor(
    @Inject(OPERATOR_CONFIG) private readonly config: OperatorConfig,
    @Inject(TENANT_REGISTRY) private readonly registry: TenantRegistry,
    @Inject(ENGINE_ADMIN) private readonly engines: EngineAdmin,
    @Inject(BACKUP_ENGINES) private readonly backupEngines: BackupEngines,
    private readonly metrics: OperatorMetrics,
    private readonly readiness: Readiness,
    private readonly reader: RegistryReader,
    @Inject(KUBERNETES_CLIENT) client: KubernetesClient,
  ) {
    this.client = client;
  }

  onApplicationBootstrap(): void {
    this.readiness.register('kubernetes', async () => {
      if (this.watches.size === 0) return; // standing by for the Lease
      await Promise.all([...this.watches.values()].map((w) => w.synced));
      await this.backups?.synced;
    });
    const election = this.config.leaderElection;
    if (!election) {
      this.metrics.leader.set(1);
      this.start();
      return;
    }
    this.elector = new LeaderElector({
      coordination: this.client.coordination,
      onError: (error) => logEvent(logger, 'warn', 'leader.error', { engine: 'kubernetes', lease: election.name, error: loggable(error) }),
      namespace: election.namespace,
      name: election.name,
      identity: election.identity,
    });
    void this.elector.run({
      onStartedLeading: () => {
        logEvent(logger, 'log', 'leader.elected', { lease: `${election.namespace}/${election.name}`, identity: election.identity });
        this.metrics.leader.set(1);
        this.start();
      },
      onStoppedLeading: () => {
        this.metrics.leader.set(0);
        if (this.stopping) return;
        logEvent(logger, 'error', 'leader.lost', { lease: `${election.namespace}/${election.name}`, identity: election.identity, text: 'exiting so that a new process stands by' });
        process.exit(1);
      },
    });
  }

  /** Starts the informers and the work queue. */
  private start(): void {
    const events = new EventRecorder(this.client.core, { instance: this.config.leaderElection?.identity ?? 'restash-operator' });
    const reconciler = new TenantReconciler(
      kubeAccess(
        this.client,
        events,
        (ns) => this.resources(ns),
        logger,
      ),
      this.registry,
      this.engines,
      { backends: this.config.backends, urls: this.config.urls, managedRedis: this.config.managedRedis },
    );
    this.reader.onChange((key) => void onRegistryChange(this.reader, reconciler, (namespace) => this.queue?.add(namespace), key));
    const healing = (this.healing = new RegistryHealing({
      registry: this.registry,
      reconciler,
      synced: () => Promise.all([...this.watches.values()].map((w) => w.synced)),
      knownNamespaces: () => this.knownNamespaces(),
      enqueue: (namespace) => this.queue?.add(namespace),
      stopping: () => this.stopping,
    }));
    this.backups = new BackupLoop({
      client: this.client,
      controller: (backups) =>
        new BackupController(
          backupKube(this.client, events, backups, (namespace, name) => this.watches.get('KvDatabase')?.cache.get(name, namespace) as KvDatabase | undefined, logger),
          this.backupEngines,
        ),
      workers: this.config.backupWorkers,
      resyncMs: this.config.resyncMs,
      log: logger,
      onWatchRestart: (reason) => this.metrics.watchRestarts.inc({ kind: 'KvBackup', reason }),
      describeError: loggable,
    });
    const cachedDatabase = (namespace: string, name: string) => this.watches.get('KvDatabase')?.cache.get(name, namespace) as KvDatabase | undefined;
    this.replication = new ReplicationLoop(
      {
        database: cachedDatabase,
        sourceUrl: async (namespace, name) => (await this.reader.kvDatabase(kvDatabaseId(namespace, name)))?.redisUrl,
        probe: probeReplication,
        failover: plannedFailover,
        ...replicationKube(this.client, events, logger),
        patchStatus: async (db, status) => {
          await this.client.patchStatus({ group: GROUP, version: VERSION, plural: KINDS.KvDatabase.plural }, db.metadata.namespace, db.metadata.name, status);
        },
      },
      logger,
      loggable,
    );
    this.queue = new WorkQueue<string>({
      workers: this.config.workers,
      // Never a pass on a partial picture: a namespace's pass before every informer listed would take the resources of
      // a kind not listed yet for dropped, and purge their data (a KvDatabase's FLUSHALL).
      handler: async (namespace) => {
        await Promise.all([...this.watches.values()].map((w) => w.synced));
        return reconciler.reconcile(namespace);
      },
      onResult: (report) => {
        this.metrics.observe(report);
        healing.rewritten(report);
        if (report.outcome === 'error') logEvent(logger, 'warn', 'reconcile.failed', { tenant: report.key, error: loggable(report.error), retryInMs: report.retryInMs });
      },
    });
    this.depthTimer = setInterval(() => this.metrics.queueDepth.set(this.queue?.depth ?? 0), 1_000);
    this.depthTimer.unref();
    healing.start();
    for (const kind of KIND_NAMES) {
      const { plural } = KINDS[kind];
      const watch = watchResources<KubernetesObject>({
        config: this.client.config,
        path: `/apis/${GROUP}/${VERSION}/${plural}`,
        list: () => this.client.customObjects.listClusterCustomObject({ group: GROUP, version: VERSION, plural }) as Promise<KubernetesListObject<KubernetesObject>>,
        onEvent: (_type, object) => {
          const { namespace, name } = object.metadata ?? {};
          if (namespace) this.queue?.add(namespace);
          if (namespace && name && kind === 'KvDatabase') {
            this.backups?.databaseChanged(namespace, name);
            this.replication?.databaseChanged(namespace, name);
          }
        },
        onError: (error) => logEvent(logger, 'warn', 'watch.error', { engine: 'kubernetes', kind: plural, error: loggable(error) }),
        onRestart: (reason) => this.metrics.watchRestarts.inc({ kind, reason }),
        resyncMs: this.config.resyncMs,
      });
      this.watches.set(kind, watch);
    }
  }

  /** The namespaces that have restash resources, from the informers' caches (those listed so far). */
  private knownNamespaces(): Set<string> {
    return new Set([...this.watches.values()].flatMap((w) => w.cache.list().map((o) => o.metadata?.namespace ?? '')).filter((ns) => ns !== ''));
  }

  /** Every restash resource of a namespace, from the informers' caches. */
  private resources(namespace: string): RestashResource[] {
    return [...this.watches.values()].flatMap((w) => w.cache.list(namespace)) as unknown as RestashResource[];
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    clearInterval(this.depthTimer);
    this.healing?.stop();
    await Promise.all([...this.watches.values()].map((w) => w.stop()));
    await Promise.all([this.queue?.shutDown(), this.backups?.stop(), this.replication?.stop()]);
    await this.elector?.stop();
  }
}
