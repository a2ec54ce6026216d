import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  API_VERSION,
  type KvBackup,
  type KvBackupStatus,
  type KvDatabase,
  type KvDatabaseStatus,
  type SecretKeyRef,
  type SnapshotLocation,
} from '@restash/shared/util-resources';
import { backupsToRemove, dueScheduleTime, nextScheduleTime, scheduledBackupName, snapshotKey } from './backup-plan';

/** The finalizer on every KvBackup that started: its snapshot is deleted from the bucket before the object goes. */
export const SNAPSHOT_FINALIZER = 'restash.dev/snapshot';

/** What the backup controller reads and writes in Kubernetes (apps/operator implements it on @kubernetes/client-node). */
export interface BackupKube {
  /** Every KvBackup of a namespace, from the informer's cache, those being deleted included. */
  backups(namespace: string): KvBackup[];
  /** A KvDatabase from the informer's cache. */
  database(namespace: string, name: string): KvDatabase | undefined;
  /** The value of a Secret's key, or undefined when the Secret or the key is missing. */
  secretValue(namespace: string, ref: SecretKeyRef): Promise<string | undefined>;
  /** Creates a KvBackup; one that exists already is no error. */
  createBackup(backup: KvBackup): Promise<void>;
  /** Deletes a KvBackup (its finalizer then runs); one that does not exist is no error. */
  deleteBackup(namespace: string, name: string): Promise<void>;
  /** Merges `status` into the KvBackup's status subresource. */
  patchBackupStatus(backup: KvBackup, status: KvBackupStatus): Promise<void>;
  /** Merges `status` into the KvDatabase's status subresource. */
  patchDatabaseStatus(database: KvDatabase, status: Partial<KvDatabaseStatus>): Promise<void>;
  /** Replaces the KvBackup's finalizers (checked against its resourceVersion). */
  setBackupFinalizers(backup: KvBackup, finalizers: string[]): Promise<void>;
  /** Sets or removes the KvBackup's ownerReference to its database (garbage collection with `deletionPolicy: Delete`). */
  setBackupOwner(backup: KvBackup, owner: KvDatabase | undefined): Promise<void>;
  /** A Kubernetes Event about the object. */
  event(object: KvBackup | KvDatabase, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void>;
}

/** Credentials and place of a bucket (data-access-backup's SnapshotStoreConfig without the prefix). */
export interface BucketAccess {
  endpoint?: string;
  region: string;
  bucket: string;
  forcePathStyle: boolean;
  accessKeyId: string;
  secretAccessKey: string;
}

/** One bucket's snapshots by full object key (SnapshotStore with an empty prefix). */
export interface SnapshotBucket {
  put(key: string, file: string): Promise<{ bytes: number; sha256?: string }>;
  delete(key: string): Promise<void>;
  close(): void;
}

/** The engines' side: where a database's Redis is, how a snapshot is taken, where it goes. */
export interface BackupEngines {
  /** The Redis URL the gateways use for the database (its registry record), or undefined while it is not registered. */
  sourceUrl(namespace: string, database: string): Promise<string | undefined>;
  /** Writes an RDB snapshot of the server at `url` into `file` (takeRdbSnapshot). @returns its size in bytes */
  snapshot(url: string, file: string): Promise<{ bytes: number }>;
  bucket(access: BucketAccess): SnapshotBucket;
}

/** What one pass over a KvBackup decided: done, or look again after this many ms. */
export type BackupResult = 'done' | { requeueAfterMs: number };

export interface BackupControllerOptions {
  now?: () => Date;
  /** Where snapshots wait between the server and the bucket (default the OS's temporary directory). */
  workDir?: string;
  /** How long a KvBackup waits for its database to appear in the cache or be registered (ms, default 60 000). */
  waitMs?: number;
}

/** A KvBackup cannot run for a reason of its spec, its database's or its Secrets': Failed with this message. */
class BackupRefused extends Error {
  /** @param mayChange whether the reason may go away soon (something not made yet): the backup waits a while first */
  constructor(
    message: string,
    readonly mayChange: boolean,
  ) {
    super(message);
  }
}

const toTime = (at: Date) => at.toISOString().replace(/\.\d{3}Z$/, 'Z');

/**
 * KV database backups (issue 32; docs/operations.md, "KV databases: backups and restore"), modelled on CloudNativePG's Backup and
 * ScheduledBackup: a KvBackup names a database; its pass takes an RDB snapshot of the database's Redis through the
 * replication protocol (no pause, no disk of the operator's beyond a temporary file) and uploads it to the bucket of
 * the database's `spec.backup.s3`, under `<prefix><backup>.rdb`, then records phase, times, size, SHA-256 and the
 * location (with the Secret references that read it, for restores and deletion). A database's schedule makes one
 * KvBackup per due time (deterministic names: never twice, whichever operator replica leads), its retention deletes
 * the oldest, and `deletionPolicy: Delete` makes its KvBackups owned by it (deleted with it by the garbage collector).
 * Deleting a KvBackup deletes its snapshot (finalizer {@link SNAPSHOT_FINALIZER}).
 */
export class BackupController {
  private readonly now: () => Date;
  private readonly waitMs: number;
  /** The backups this process is running (a Running phase not in it was left by a process that died). */
  private readonly running = new Set<string>();

  constructor(
    private readonly kube: BackupKube,
    private readonly engines: BackupEngines,
    private readonly options: BackupControllerOptions = {},
  ) {
    this.now = options.now ?? (() => new Date());
    this.waitMs = options.waitMs ?? 60_000;
  }

  /**
   * One pass over KvBackup `namespace/name`: its snapshot deleted when it is being deleted, else run when it has not
   * completed or failed (again when a process that ran it died), then its database's retention applied.
   * @throws Error when the API server or the registry fails (the work queue retries); a failed snapshot or upload is
   *   the backup's Failed phase instead
   */
  async reconcileBackup(namespace: string, name: string): Promise<BackupResult> {
    const backup = this.kube.backups(namespace).find((b) => b.metadata.name === name);
    if (!backup) return 'done';
    const finalizers = backup.metadata.finalizers ?? [];
    if (backup.metadata.deletionTimestamp) {
      if (finalizers.includes(SNAPSHOT_FINALIZER)) {
        await this.deleteSnapshot(backup);
        await this.kube.setBackupFinalizers(
          backup,
          finalizers.filter((f) => f !== SNAPSHOT_FINALIZER),
        );
      }
      return 'done';
    }
    const phase = backup.status?.phase;
    const id = `${namespace}/${name}`;
    if (phase === 'Completed' || phase === 'Failed' || this.running.has(id)) return this.adopt(backup);
    const database = this.kube.database(namespace, backup.spec.database);
    const policy = database?.spec.backup;
    // The registry's answer: an error (the control Redis away) is the work queue's to retry, never the backup's failure.
    const url = database && policy ? await this.engines.sourceUrl(namespace, database.metadata.name) : undefined;
    try {
      if (!database) throw new BackupRefused(`KvDatabase ${backup.spec.database} not found in namespace ${namespace}`, true);
      if (!policy) throw new BackupRefused(`KvDatabase ${database.metadata.name} has no spec.backup: nowhere to store the snapshot`, false);
      if (!url) throw new BackupRefused(`KvDatabase ${database.metadata.name} is not registered yet (not Ready)`, true);
      if (!url.startsWith('redis://') && !url.startsWith('rediss://')) throw new BackupRefused(`KvDatabase ${database.metadata.name}: backups need a redis:// or rediss:// server, not ${url.split(':')[0]}://`, false);
      if (!finalizers.includes(SNAPSHOT_FINALIZER)) await this.kube.setBackupFinalizers(backup, [...finalizers, SNAPSHOT_FINALIZER]);
      await this.kube.setBackupOwner(backup, policy.deletionPolicy === 'Delete' ? database : undefined);
      const { s3 } = policy;
      const location: SnapshotLocation = {
        ...(s3.endpoint !== undefined ? { endpoint: s3.endpoint } : {}),
        region: s3.region,
        bucket: s3.bucket,
        forcePathStyle: s3.forcePathStyle,
        accessKeyIdSecretRef: s3.accessKeyIdSecretRef,
        secretAccessKeySecretRef: s3.secretAccessKeySecretRef,
        key: snapshotKey(s3.prefix, namespace, database.metadata.name, name),
      };
      const access = await this.access(namespace, location);
      this.running.add(id);
      try {
        const startedAt = toTime(this.now());
        await this.kube.patchBackupStatus(backup, { phase: 'Running', startedAt, location, restoreNamespaces: policy.restoreNamespaces, message: '' });
        const stored = await this.upload(url, access, location.key);
        const completedAt = toTime(this.now());
        await this.kube.patchBackupStatus(backup, { phase: 'Completed', completedAt, bytes: stored.bytes, ...(stored.sha256 ? { sha256: stored.sha256 } : {}) });
        await this.kube.event(backup, 'Normal', 'Completed', `snapshot of ${stored.bytes} bytes stored as ${location.bucket}/${location.key}`);
        const last = database.status?.lastSuccessfulBackupTime;
        if (!last || last <= completedAt) await this.kube.patchDatabaseStatus(database, { lastSuccessfulBackup: name, lastSuccessfulBackupTime: completedAt });
      } finally {
        this.running.delete(id);
      }
      await this.applyRetention(database);
      return 'done';
    } catch (error) {
      const young = this.now().getTime() - (Date.parse(backup.metadata.creationTimestamp ?? '') || 0) < this.waitMs;
      if (error instanceof BackupRefused && error.mayChange && young) {
        // A database or Secret just made, or a database not Ready yet: the backup waits for it a while.
        if (backup.status?.message !== error.message) await this.kube.patchBackupStatus(backup, { phase: 'Pending', message: error.message });
        return { requeueAfterMs: 2_000 };
      }
      const message = error instanceof Error ? error.message : String(error);
      await this.kube.patchBackupStatus(backup, { phase: 'Failed', completedAt: toTime(this.now()), message });
      await this.kube.event(backup, 'Warning', 'Failed', message);
      return 'done';
    }
  }

  /**
   * One pass of the schedule of KvDatabase `namespace/name` (`spec.backup.schedule`): when a time it names has come
   * since the last one (or since the database was made), a KvBackup `<database>-<time>` is made, unless one of the
   * database's backups is still pending or running (then that time is skipped, with an Event); `lastScheduleTime` and
   * `nextScheduleTime` go in the database's status.
   * @returns ms until the next scheduled time (the caller looks again then), or undefined without a schedule
   * @throws Error when the API server fails
   */
  async reconcileSchedule(namespace: string, name: string): Promise<number | undefined> {
    const database = this.kube.database(namespace, name);
    const schedule = database?.spec.backup?.schedule;
    if (!database || !schedule || database.metadata.deletionTimestamp) return undefined;
    const now = this.now();
    const since = new Date(Date.parse(database.status?.lastScheduleTime ?? database.metadata.creationTimestamp ?? '') || now.getTime());
    const due = dueScheduleTime(schedule, since, now);
    const next = nextScheduleTime(schedule, due ?? now);
    const status: Partial<KvDatabaseStatus> = { nextScheduleTime: toTime(next) };
    if (due) {
      status.lastScheduleTime = toTime(due);
      const busy = this.kube.backups(namespace).find((b) => b.spec.database === name && !b.metadata.deletionTimestamp && (b.status?.phase ?? 'Pending') !== 'Completed' && b.status?.phase !== 'Failed');
      if (busy) {
        await this.kube.event(database, 'Warning', 'BackupSkipped', `the backup of ${toTime(due)} was skipped: ${busy.metadata.name} has not finished`);
      } else {
        const backup: KvBackup = {
          apiVersion: API_VERSION,
          kind: 'KvBackup',
          metadata: { name: scheduledBackupName(name, due), namespace, labels: { 'restash.dev/database': name, 'restash.dev/scheduled': 'true' } },
          spec: { database: name },
        };
        await this.kube.createBackup(backup);
      }
    }
    if (status.lastScheduleTime !== undefined || database.status?.nextScheduleTime !== status.nextScheduleTime) await this.kube.patchDatabaseStatus(database, status);
    return Math.max(0, next.getTime() - now.getTime());
  }

  /**
   * A finished backup: its ownerReference follows the database's deletionPolicy (a policy changed after it ran), and
   * the database's retention is applied (the cache shows a completion only after the pass that wrote it).
   */
  private async adopt(backup: KvBackup): Promise<BackupResult> {
    const database = this.kube.database(backup.metadata.namespace, backup.spec.database);
    if (!database?.spec.backup || database.metadata.deletionTimestamp || this.running.has(`${backup.metadata.namespace}/${backup.metadata.name}`)) return 'done';
    const owned = (backup.metadata.ownerReferences ?? []).some((o) => o.uid === database.metadata.uid);
    const wanted = database.spec.backup.deletionPolicy === 'Delete';
    if (owned !== wanted) await this.kube.setBackupOwner(backup, wanted ? database : undefined);
    await this.applyRetention(database);
    return 'done';
  }

  /** Deletes the KvBackups the database's retention removes. */
  private async applyRetention(database: KvDatabase): Promise<void> {
    const { namespace } = database.metadata;
    for (const name of backupsToRemove(database, this.kube.backups(namespace), this.now())) {
      await this.kube.deleteBackup(namespace, name);
      await this.kube.event(database, 'Normal', 'BackupRemoved', `KvBackup ${name} removed by spec.backup.retention`);
    }
  }

  /** The snapshot of the server at `url`, through a temporary file, into the bucket as `key`. */
  private async upload(url: string, access: BucketAccess, key: string): Promise<{ bytes: number; sha256?: string }> {
    const bucket = this.engines.bucket(access);
    const dir = await mkdtemp(join(this.options.workDir ?? tmpdir(), 'kv-backup-'));
    try {
      const file = join(dir, 'dump.rdb');
      await this.engines.snapshot(url, file);
      return await bucket.put(key, file);
    } finally {
      bucket.close();
      await rm(dir, { recursive: true, force: true });
    }
  }

  /** Deletes a backup's snapshot; when its credentials are gone (a namespace being deleted), leaves it with a Warning Event. */
  private async deleteSnapshot(backup: KvBackup): Promise<void> {
    const location = backup.status?.location;
    if (!location) return;
    let access: BucketAccess;
    try {
      access = await this.access(backup.metadata.namespace, location);
    } catch (error) {
      await this.kube.event(backup, 'Warning', 'SnapshotLeft', `the snapshot ${location.bucket}/${location.key} was not deleted: ${(error as Error).message}`);
      return;
    }
    const bucket = this.engines.bucket(access);
    try {
      await bucket.delete(location.key);
    } finally {
      bucket.close();
    }
  }

  /** The bucket's credentials from the namespace's Secrets. @throws BackupRefused when a Secret or key is missing */
  private async access(namespace: string, location: SnapshotLocation): Promise<BucketAccess> {
    const read = async (ref: SecretKeyRef) => {
      const value = await this.kube.secretValue(namespace, ref);
      if (value === undefined) throw new BackupRefused(`Secret ${ref.name} (key ${ref.key}) not found in namespace ${namespace}`, true);
      return value;
    };
    return {
      ...(location.endpoint !== undefined ? { endpoint: location.endpoint } : {}),
      region: location.region,
      bucket: location.bucket,
      forcePathStyle: location.forcePathStyle,
      accessKeyId: await read(location.accessKeyIdSecretRef),
      secretAccessKey: await read(location.secretAccessKeySecretRef),
    };
  }
}
