import { createHash } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { KINDS, type KvBackup, type KvDatabase, type SecretKeyRef } from '@restash/shared/util-resources';
import { type BackupEngines, type BackupKube, BackupController, type BucketAccess, SNAPSHOT_FINALIZER } from './backup-controller';

const s3 = { endpoint: 'http://127.0.0.1:8333', bucket: 'kv-backups', accessKeyIdSecretRef: { name: 's3', key: 'id' }, secretAccessKeySecretRef: { name: 's3', key: 'secret' } };

/** In-memory fakes of the controller's ports: the cache, the Secrets, the bucket's objects, what was called. */
class Fakes implements BackupKube, BackupEngines {
  databases: KvDatabase[] = [];
  stored: KvBackup[] = [];
  secrets = new Map<string, string>([
    ['shop/s3/id', 'AKID'],
    ['shop/s3/secret', 'SECRET'],
  ]);
  objects = new Map<string, Buffer>();
  events: string[] = [];
  urls = new Map<string, string>([['shop/main', 'redis://restash-gateway:pw@10.0.0.1:6379']]);
  snapshotFails: Error | undefined;
  accessSeen: BucketAccess[] = [];

  backups(namespace: string): KvBackup[] {
    return this.stored.filter((b) => b.metadata.namespace === namespace);
  }
  database(namespace: string, name: string): KvDatabase | undefined {
    return this.databases.find((d) => d.metadata.namespace === namespace && d.metadata.name === name);
  }
  async secretValue(namespace: string, ref: SecretKeyRef): Promise<string | undefined> {
    return this.secrets.get(`${namespace}/${ref.name}/${ref.key}`);
  }
  async createBackup(backup: KvBackup): Promise<void> {
    if (this.stored.some((b) => b.metadata.name === backup.metadata.name)) return;
    this.stored.push({ ...backup, metadata: { ...backup.metadata, creationTimestamp: new Date().toISOString() } });
  }
  async deleteBackup(namespace: string, name: string): Promise<void> {
    const backup = this.stored.find((b) => b.metadata.namespace === namespace && b.metadata.name === name);
    if (!backup) return;
    if ((backup.metadata.finalizers ?? []).length > 0) backup.metadata.deletionTimestamp = new Date().toISOString();
    else this.stored = this.stored.filter((b) => b !== backup);
  }
  async patchBackupStatus(backup: KvBackup, status: KvBackup['status']): Promise<void> {
    const found = this.stored.find((b) => b.metadata.name === backup.metadata.name);
    if (found) found.status = { ...found.status, ...status };
  }
  async patchDatabaseStatus(database: KvDatabase, status: Partial<NonNullable<KvDatabase['status']>>): Promise<void> {
    database.status = { ...database.status, ...status };
  }
  async setBackupFinalizers(backup: KvBackup, finalizers: string[]): Promise<void> {
    const found = this.stored.find((b) => b.metadata.name === backup.metadata.name);
    if (!found) return;
    found.metadata.finalizers = finalizers;
    if (finalizers.length === 0 && found.metadata.deletionTimestamp) this.stored = this.stored.filter((b) => b !== found);
  }
  async setBackupOwner(backup: KvBackup, owner: KvDatabase | undefined): Promise<void> {
    const found = this.stored.find((b) => b.metadata.name === backup.metadata.name);
    if (found) found.metadata.ownerReferences = owner ? [{ apiVersion: owner.apiVersion, kind: owner.kind, name: owner.metadata.name, uid: owner.metadata.uid ?? '' }] : [];
  }
  async event(object: KvBackup | KvDatabase, type: string, reason: string, message: string): Promise<void> {
    this.events.push(`${object.kind}/${object.metadata.name} ${type} ${reason}: ${message}`);
  }
  async sourceUrl(namespace: string, database: string): Promise<string | undefined> {
    return this.urls.get(`${namespace}/${database}`);
  }
  async snapshot(url: string, file: string): Promise<{ bytes: number }> {
    if (this.snapshotFails) throw this.snapshotFails;
    await writeFile(file, `REDIS0011 of ${url}`);
    return { bytes: 0 };
  }
  bucket(access: BucketAccess) {
    this.accessSeen.push(access);
    return {
      put: async (key: string, file: string) => {
        const body = await readFile(file);
        this.objects.set(key, body);
        return { bytes: body.length, sha256: createHash('sha256').update(body).digest('hex') };
      },
      delete: async (key: string) => void this.objects.delete(key),
      close: () => undefined,
    };
  }
}

function database(name: string, backup: Record<string, unknown> | undefined, created = '2026-11-28T00:00:00Z'): KvDatabase {
  return {
    apiVersion: 'restash.dev/v1alpha1',
    kind: 'KvDatabase',
    metadata: { name, namespace: 'shop', uid: `uid-${name}`, creationTimestamp: created },
    spec: KINDS.KvDatabase.spec.parse(backup ? { backup: { s3, ...backup } } : {}) as KvDatabase['spec'],
  };
}

const onDemand = (name: string, db = 'main', created = new Date().toISOString()): KvBackup => ({
  apiVersion: 'restash.dev/v1alpha1',
  kind: 'KvBackup',
  metadata: { name, namespace: 'shop', creationTimestamp: created },
  spec: { database: db },
});

describe('BackupController: one KvBackup', () => {
  it('snapshots the database into its bucket and records phase, times, size, digest and location', async () => {
    const fakes = new Fakes();
    fakes.databases.push(database('main', {}));
    fakes.stored.push(onDemand('main-now'));
    await expect(new BackupController(fakes, fakes).reconcileBackup('shop', 'main-now')).resolves.toBe('done');

    const body = fakes.objects.get('shop/main/main-now.rdb');
    expect(body?.toString()).toBe('REDIS0011 of redis://restash-gateway:pw@10.0.0.1:6379');
    const [stored] = fakes.stored;
    expect(stored?.status).toMatchObject({
      phase: 'Completed',
      bytes: body?.length,
      sha256: createHash('sha256').update(body ?? '').digest('hex'),
      location: { ...s3, region: 'us-east-1', forcePathStyle: true, key: 'shop/main/main-now.rdb' },
      restoreNamespaces: [],
      startedAt: expect.stringMatching(/Z$/),
      completedAt: expect.stringMatching(/Z$/),
    });
    expect(stored?.metadata.finalizers).toEqual([SNAPSHOT_FINALIZER]);
    expect(fakes.accessSeen[0]).toMatchObject({ accessKeyId: 'AKID', secretAccessKey: 'SECRET', endpoint: s3.endpoint });
    expect(fakes.databases[0]?.status?.lastSuccessfulBackup).toBe('main-now');
    expect(fakes.events).toEqual([expect.stringMatching(/^KvBackup\/main-now Normal Completed: snapshot of \d+ bytes stored as kv-backups\/shop\/main\/main-now.rdb$/)]);
  });

  it('fails at once for a database without spec.backup, and waits a while for one that is not there yet', async () => {
    const fakes = new Fakes();
    fakes.databases.push(database('main', undefined));
    fakes.stored.push(onDemand('main-now'), onDemand('later', 'later'), onDemand('gone', 'gone', '2026-01-01T00:00:00Z'));
    const controller = new BackupController(fakes, fakes);
    await controller.reconcileBackup('shop', 'main-now');
    expect(fakes.stored[0]?.status).toMatchObject({ phase: 'Failed', message: 'KvDatabase main has no spec.backup: nowhere to store the snapshot' });
    await expect(controller.reconcileBackup('shop', 'later')).resolves.toEqual({ requeueAfterMs: 2000 });
    expect(fakes.stored[1]?.status).toEqual({ phase: 'Pending', message: 'KvDatabase later not found in namespace shop' });
    await controller.reconcileBackup('shop', 'gone');
    expect(fakes.stored[2]?.status).toMatchObject({ phase: 'Failed', message: 'KvDatabase gone not found in namespace shop' });
    expect(fakes.objects.size).toBe(0);
  });

  it('records a failed snapshot as Failed with its reason, and never runs a finished backup again', async () => {
    const fakes = new Fakes();
    fakes.databases.push(database('main', {}));
    fakes.stored.push(onDemand('main-now'));
    fakes.snapshotFails = new Error('NOPERM this user has no permissions to run the psync command');
    const controller = new BackupController(fakes, fakes);
    await controller.reconcileBackup('shop', 'main-now');
    expect(fakes.stored[0]?.status).toMatchObject({ phase: 'Failed', message: 'NOPERM this user has no permissions to run the psync command' });
    fakes.snapshotFails = undefined;
    await controller.reconcileBackup('shop', 'main-now');
    expect(fakes.stored[0]?.status?.phase).toBe('Failed');
    expect(fakes.objects.size).toBe(0);
  });

  it('refuses a database served through Redis Sentinel (no redis:// server to snapshot)', async () => {
    const fakes = new Fakes();
    fakes.databases.push(database('main', {}));
    fakes.urls.set('shop/main', 'redis+sentinel://s1:26379/mymaster');
    fakes.stored.push(onDemand('main-now', 'main', '2026-01-01T00:00:00Z'));
    await new BackupController(fakes, fakes).reconcileBackup('shop', 'main-now');
    expect(fakes.stored[0]?.status).toMatchObject({ phase: 'Failed', message: 'KvDatabase main: backups need a redis:// or rediss:// server, not redis+sentinel://' });
  });

  it('deletes its snapshot when deleted, and lets go without one when the credentials are gone', async () => {
    const fakes = new Fakes();
    fakes.databases.push(database('main', {}));
    fakes.stored.push(onDemand('a'), onDemand('b'));
    const controller = new BackupController(fakes, fakes);
    await controller.reconcileBackup('shop', 'a');
    await controller.reconcileBackup('shop', 'b');
    expect([...fakes.objects.keys()].sort()).toEqual(['shop/main/a.rdb', 'shop/main/b.rdb']);

    await fakes.deleteBackup('shop', 'a');
    await controller.reconcileBackup('shop', 'a');
    expect([...fakes.objects.keys()]).toEqual(['shop/main/b.rdb']);
    expect(fakes.stored.map((b) => b.metadata.name)).toEqual(['b']);

    fakes.secrets.clear();
    await fakes.deleteBackup('shop', 'b');
    await controller.reconcileBackup('shop', 'b');
    expect(fakes.stored).toEqual([]);
    expect(fakes.objects.has('shop/main/b.rdb')).toBe(true);
    expect(fakes.events.at(-1)).toBe('KvBackup/b Warning SnapshotLeft: the snapshot kv-backups/shop/main/b.rdb was not deleted: Secret s3 (key id) not found in namespace shop');
  });

  it("is owned by its database when the database's deletionPolicy is Delete, and applies the retention after it", async () => {
    const fakes = new Fakes();
    fakes.databases.push(database('main', { deletionPolicy: 'Delete', retention: { count: 1 } }));
    fakes.stored.push(onDemand('a', 'main', '2026-11-28T01:00:00Z'), onDemand('b', 'main', '2026-11-28T02:00:00Z'));
    const controller = new BackupController(fakes, fakes);
    await controller.reconcileBackup('shop', 'a');
    await controller.reconcileBackup('shop', 'b');
    expect(fakes.stored.find((b) => b.metadata.name === 'a')?.metadata.deletionTimestamp).toEqual(expect.any(String));
    expect(fakes.events).toContain('KvDatabase/main Normal BackupRemoved: KvBackup a removed by spec.backup.retention');
    await controller.reconcileBackup('shop', 'a'); // the deletion's event: its finalizer deletes the snapshot
    expect(fakes.stored.map((b) => b.metadata.name)).toEqual(['b']);
    expect(fakes.stored[0]?.metadata.ownerReferences).toEqual([{ apiVersion: 'restash.dev/v1alpha1', kind: 'KvDatabase', name: 'main', uid: 'uid-main' }]);
    expect([...fakes.objects.keys()]).toEqual(['shop/main/b.rdb']);
  });
});

describe('BackupController: a schedule', () => {
  it('makes one KvBackup per due time, named after it, and records the last and next times', async () => {
    const fakes = new Fakes();
    const main = database('main', { schedule: '0 3 * * *' }, '2026-11-27T12:00:00Z');
    fakes.databases.push(main);
    let now = new Date('2026-11-28T02:59:00Z');
    const controller = new BackupController(fakes, fakes, { now: () => now });
    await expect(controller.reconcileSchedule('shop', 'main')).resolves.toBe(60_000);
    expect(fakes.stored).toEqual([]);
    expect(main.status).toEqual({ nextScheduleTime: '2026-11-28T03:00:00Z' });

    now = new Date('2026-11-28T03:00:02Z');
    await controller.reconcileSchedule('shop', 'main');
    await controller.reconcileSchedule('shop', 'main');
    expect(fakes.stored.map((b) => [b.metadata.name, b.spec.database])).toEqual([['main-20261128030000', 'main']]);
    expect(main.status).toEqual({ lastScheduleTime: '2026-11-28T03:00:00Z', nextScheduleTime: '2026-11-29T03:00:00Z' });
  });

  it('skips a due time while an earlier backup has not finished', async () => {
    const fakes = new Fakes();
    fakes.databases.push(database('main', { schedule: '*/5 * * * * *' }, '2026-11-28T03:00:00Z'));
    fakes.stored.push({ ...onDemand('slow'), status: { phase: 'Running' } });
    const controller = new BackupController(fakes, fakes, { now: () => new Date('2026-11-28T03:00:06Z') });
    await controller.reconcileSchedule('shop', 'main');
    expect(fakes.stored.map((b) => b.metadata.name)).toEqual(['slow']);
    expect(fakes.events).toEqual(['KvDatabase/main Warning BackupSkipped: the backup of 2026-11-28T03:00:05Z was skipped: slow has not finished']);
    expect(fakes.databases[0]?.status?.lastScheduleTime).toBe('2026-11-28T03:00:05Z');
  });

  it('does nothing for a database without a schedule or being deleted', async () => {
    const fakes = new Fakes();
    fakes.databases.push(database('main', {}), { ...database('old', { schedule: '* * * * *' }), metadata: { name: 'old', namespace: 'shop', deletionTimestamp: '2026-11-28T00:00:00Z' } });
    const controller = new BackupController(fakes, fakes);
    await expect(controller.reconcileSchedule('shop', 'main')).resolves.toBeUndefined();
    await expect(controller.reconcileSchedule('shop', 'old')).resolves.toBeUndefined();
    await expect(controller.reconcileSchedule('shop', 'missing')).resolves.toBeUndefined();
    expect(fakes.stored).toEqual([]);
  });
});
