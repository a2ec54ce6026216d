import type { KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import { type KubernetesClient, type ResourceWatch, watchResources } from '@restash/operator/data-access-kubernetes';
import { WorkQueue } from '@restash/operator/util-controller';
import type { BackupController } from '@restash/kv/feature-backup';
import { GROUP, KV_BACKUP_KIND, type KvBackup, VERSION } from '@restash/shared/util-resources';
import { type EventLogger, logEvent } from '@restash/shared/util-http';

/** A schedule is looked at again at most this long after its last pass (ms), whatever its next time. */
const SCHEDULE_RECHECK_MS = 60_000;

export interface BackupLoopOptions {
  client: KubernetesClient;
  controller: (backups: (namespace: string) => KvBackup[]) => BackupController;
  /** Backups run at once. */
  workers: number;
  resyncMs: number;
  log: EventLogger;
  onWatchRestart: (reason: string) => void;
  describeError: (error: unknown) => unknown;
}

/**
 * The operator's backup loop (kv-feature-backup's BackupController on the cluster): an informer of KvBackups whose
 * events queue `<namespace>/<name>` on the backups' work queue, and a second queue of KvDatabases' schedules, fed by
 * the KvDatabase informer ({@link databaseChanged}) and re-queued for each schedule's next time.
 */
export class BackupLoop {
  private readonly watch: ResourceWatch<KubernetesObject>;
  private readonly backups: WorkQueue<string>;
  private readonly schedules: WorkQueue<string>;

  constructor(options: BackupLoopOptions) {
    const { client, log } = options;
    const { plural } = KV_BACKUP_KIND;
    const split = (key: string) => key.split('/') as [string, string];
    // Events come from the informer's first list, which starts after this constructor returned.
    this.watch = watchResources<KubernetesObject>({
      config: client.config,
      path: `/apis/${GROUP}/${VERSION}/${plural}`,
      list: () => client.customObjects.listClusterCustomObject({ group: GROUP, version: VERSION, plural }) as Promise<KubernetesListObject<KubernetesObject>>,
      onEvent: (_type, object) => {
        const { namespace, name } = object.metadata ?? {};
        if (namespace && name) this.backups.add(`${namespace}/${name}`);
      },
      onError: (error) => logEvent(log, 'warn', 'watch.error', { engine: 'kubernetes', kind: plural, error: options.describeError(error) }),
      onRestart: options.onWatchRestart,
      resyncMs: options.resyncMs,
    });
    const controller = options.controller((namespace) => this.watch.cache.list(namespace) as unknown as KvBackup[]);
    this.backups = new WorkQueue<string>({
      workers: options.workers,
      handler: async (key) => {
        await this.watch.synced;
        return controller.reconcileBackup(...split(key));
      },
      onResult: (report) => {
        if (report.outcome === 'error') logEvent(log, 'warn', 'backup.failed', { engine: 'kubernetes', backup: report.key, error: options.describeError(report.error), retryInMs: report.retryInMs });
      },
    });
    this.schedules = new WorkQueue<string>({
      workers: 1,
      handler: async (key) => {
        await this.watch.synced;
        const ms = await controller.reconcileSchedule(...split(key));
        return ms === undefined ? 'done' : { requeueAfterMs: Math.min(Math.max(ms, 100), SCHEDULE_RECHECK_MS) };
      },
      onResult: (report) => {
        if (report.outcome === 'error') logEvent(log, 'warn', 'backup.schedule-failed', { engine: 'kubernetes', database: report.key, error: options.describeError(report.error), retryInMs: report.retryInMs });
      },
    });
  }

  /** Resolves once the KvBackup informer has listed everything. */
  get synced(): Promise<void> {
    return this.watch.synced;
  }

  /** A KvDatabase changed (or was resynced): its schedule is looked at now. */
  databaseChanged(namespace: string, name: string): void {
    this.schedules.add(`${namespace}/${name}`);
  }

  /** Stops the informer and waits for the backups running now. */
  async stop(): Promise<void> {
    await this.watch.stop();
    await Promise.all([this.backups.shutDown(), this.schedules.shutDown()]);
  }
}
