import type { KvBackup, KvDatabase } from '@restash/shared/util-resources';
import { KINDS } from '@restash/shared/util-resources';
import { ageMs, backupsToRemove, dueScheduleTime, nextScheduleTime, scheduledBackupName, snapshotKey } from './backup-plan';

const s3 = { bucket: 'kv-backups', accessKeyIdSecretRef: { name: 's3', key: 'id' }, secretAccessKeySecretRef: { name: 's3', key: 'secret' } };

function database(retention: Record<string, unknown> | undefined): KvDatabase {
  return {
    apiVersion: 'restash.dev/v1alpha1',
    kind: 'KvDatabase',
    metadata: { name: 'main', namespace: 'shop' },
    spec: KINDS.KvDatabase.spec.parse({ backup: { s3, ...(retention ? { retention } : {}) } }) as KvDatabase['spec'],
  };
}

function backup(name: string, phase: 'Pending' | 'Running' | 'Completed' | 'Failed', at: string, db = 'main'): KvBackup {
  return {
    apiVersion: 'restash.dev/v1alpha1',
    kind: 'KvBackup',
    metadata: { name, namespace: 'shop', creationTimestamp: at },
    spec: { database: db },
    status: { phase, ...(phase === 'Completed' ? { completedAt: at } : {}) },
  };
}

describe('ageMs', () => {
  it('reads a count and a unit', () => {
    expect(ageMs('30d')).toBe(30 * 86_400_000);
    expect(ageMs('12h')).toBe(12 * 3_600_000);
    expect(ageMs('1w')).toBe(604_800_000);
    expect(ageMs('90s')).toBe(90_000);
  });

  it('refuses anything else', () => {
    expect(() => ageMs('30')).toThrow(TypeError);
    expect(() => ageMs('0d')).toThrow(TypeError);
    expect(() => ageMs('1y')).toThrow(TypeError);
  });
});

describe('the schedule', () => {
  const now = new Date('2026-11-28T03:00:07Z');

  it('is due at the latest time it names since the last one, missed times collapsed into it', () => {
    expect(dueScheduleTime('0 3 * * *', new Date('2026-11-25T03:00:00Z'), now)).toEqual(new Date('2026-11-28T03:00:00Z'));
    expect(dueScheduleTime('*/5 * * * * *', new Date('2026-11-28T02:00:00Z'), now)).toEqual(new Date('2026-11-28T03:00:05Z'));
  });

  it('is not due when the latest time it names is the last one made', () => {
    expect(dueScheduleTime('0 3 * * *', new Date('2026-11-28T03:00:00Z'), now)).toBeUndefined();
    expect(dueScheduleTime('0 4 * * *', new Date('2026-11-28T03:00:00Z'), now)).toBeUndefined();
  });

  it('is due at a time equal to now', () => {
    expect(dueScheduleTime('0 3 * * *', new Date('2026-11-27T03:00:00Z'), new Date('2026-11-28T03:00:00Z'))).toEqual(new Date('2026-11-28T03:00:00Z'));
  });

  it('names the next time, in UTC', () => {
    expect(nextScheduleTime('0 3 * * *', now)).toEqual(new Date('2026-11-29T03:00:00Z'));
    expect(nextScheduleTime('*/5 * * * * *', now)).toEqual(new Date('2026-11-28T03:00:10Z'));
  });
});

describe('names and keys', () => {
  it('names a scheduled backup after its database and time, in at most 60 characters for a 45-character database', () => {
    expect(scheduledBackupName('main', new Date('2026-11-28T03:00:05.250Z'))).toBe('main-20261128030005');
    expect(scheduledBackupName('d'.repeat(45), new Date()).length).toBe(60);
  });

  it("keys a snapshot under the target's prefix, by default the namespace and database", () => {
    expect(snapshotKey(undefined, 'shop', 'main', 'main-1')).toBe('shop/main/main-1.rdb');
    expect(snapshotKey('kv/', 'shop', 'main', 'main-1')).toBe('kv/main-1.rdb');
  });
});

describe('backupsToRemove', () => {
  const now = new Date('2026-11-28T12:00:00Z');
  const backups = [
    backup('a', 'Completed', '2026-11-20T00:00:00Z'),
    backup('b', 'Failed', '2026-11-21T00:00:00Z'),
    backup('c', 'Completed', '2026-11-26T00:00:00Z'),
    backup('d', 'Failed', '2026-11-27T00:00:00Z'),
    backup('e', 'Completed', '2026-11-28T00:00:00Z'),
    backup('f', 'Running', '2026-11-28T11:00:00Z'),
    backup('other', 'Completed', '2026-11-01T00:00:00Z', 'cache'),
  ];

  it('keeps everything without a retention', () => {
    expect(backupsToRemove(database(undefined), backups, now)).toEqual([]);
  });

  it('keeps the newest count of completed backups, and the failures made after the oldest kept', () => {
    expect(backupsToRemove(database({ count: 2 }), backups, now)).toEqual(['a', 'b']);
    expect(backupsToRemove(database({ count: 1 }), backups, now)).toEqual(['a', 'b', 'c', 'd']);
  });

  it('removes completed backups older than maxAge, never the newest completed one', () => {
    expect(backupsToRemove(database({ maxAge: '3d' }), backups, now)).toEqual(['a', 'b']);
    expect(backupsToRemove(database({ maxAge: '1h' }), backups, now)).toEqual(['a', 'b', 'c', 'd']);
  });

  it("skips backups being deleted and other databases' backups, and never removes a running one", () => {
    const deleting = backups.map((b) => (b.metadata.name === 'a' ? { ...b, metadata: { ...b.metadata, deletionTimestamp: '2026-11-28T11:59:00Z' } } : b));
    expect(backupsToRemove(database({ count: 1 }), deleting, now)).toEqual(['b', 'c', 'd']);
  });

  it('removes no failure while nothing completed', () => {
    expect(backupsToRemove(database({ count: 1 }), [backup('x', 'Failed', '2026-11-20T00:00:00Z')], now)).toEqual([]);
  });
});
