import { CronExpressionParser } from 'cron-parser';
import type { KvBackup, KvDatabase } from '@restash/shared/util-resources';

/** Milliseconds of each unit of an age (`30d`): the grammar of kinds.ts's AGE. */
const AGE_UNITS_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 } as const;

/**
 * An age such as `30d` or `12h` in milliseconds (`spec.backup.retention.maxAge`, docs/operations.md, "KV databases: backups and restore").
 * @throws TypeError when `age` is not a count and a unit of s, m, h, d, w
 */
export function ageMs(age: string): number {
  const match = /^([1-9][0-9]{0,5})([smhdw])$/.exec(age);
  if (!match) throw new TypeError(`not an age: ${JSON.stringify(age)} (expected a count and a unit: s, m, h, d or w)`);
  return Number(match[1]) * AGE_UNITS_MS[match[2] as keyof typeof AGE_UNITS_MS];
}

/**
 * The latest time at or before `now` that the cron `schedule` (5 fields, or 6 with seconds first; UTC) names, or
 * undefined when it names none after `since`: the scheduled backup that is due. Missed times collapse into this one
 * (an operator that was down runs one backup, not one per missed time), as CloudNativePG's ScheduledBackup does.
 * @throws Error from cron-parser when `schedule` is not cron (the CRD refuses most such values)
 */
export function dueScheduleTime(schedule: string, since: Date, now: Date): Date | undefined {
  const latest = CronExpressionParser.parse(schedule, { tz: 'UTC', currentDate: new Date(now.getTime() + 1) }).prev().toDate();
  return latest.getTime() > since.getTime() ? latest : undefined;
}

/** The first time after `after` that the cron `schedule` names (UTC). @throws Error from cron-parser when it is not cron */
export function nextScheduleTime(schedule: string, after: Date): Date {
  return CronExpressionParser.parse(schedule, { tz: 'UTC', currentDate: after }).next().toDate();
}

/**
 * The name of the KvBackup a schedule makes at `at`: `<database>-<yyyymmddhhmmss>` (UTC), at most 45 + 15 characters,
 * the same for every operator replica, so that a backup is never made twice for one time.
 */
export function scheduledBackupName(database: string, at: Date): string {
  return `${database}-${at.toISOString().replace(/[-:T]/g, '').slice(0, 14)}`;
}

/** The object key of a backup's snapshot: the target's prefix (default `<namespace>/<database>/`) and `<backup>.rdb`. */
export function snapshotKey(prefix: string | undefined, namespace: string, database: string, backup: string): string {
  return `${prefix ?? `${namespace}/${database}/`}${backup}.rdb`;
}

const completedAt = (b: KvBackup) => Date.parse(b.status?.completedAt ?? '') || 0;
const createdAt = (b: KvBackup) => Date.parse(b.metadata.creationTimestamp ?? '') || 0;

/**
 * The KvBackups of `database` that its retention removes (`spec.backup.retention`): of the completed ones, all but
 * the newest `count` and those older than `maxAge` — the newest completed backup is always kept, whatever its age —
 * and the failed ones made before the oldest completed backup kept (a failure stays visible until a later backup
 * succeeded). Pending and running backups are never removed.
 * @param backups every KvBackup of the namespace (others' and those being deleted are skipped)
 * @returns names, oldest first
 */
export function backupsToRemove(database: KvDatabase, backups: readonly KvBackup[], now: Date): string[] {
  const retention = database.spec.backup?.retention;
  if (!retention || (retention.count === undefined && retention.maxAge === undefined)) return [];
  const own = backups.filter((b) => b.spec.database === database.metadata.name && !b.metadata.deletionTimestamp);
  const completed = own.filter((b) => b.status?.phase === 'Completed').sort((a, b) => completedAt(b) - completedAt(a) || createdAt(b) - createdAt(a));
  const maxAge = retention.maxAge === undefined ? undefined : ageMs(retention.maxAge);
  const kept = completed.filter((b, i) => i === 0 || ((retention.count === undefined || i < retention.count) && (maxAge === undefined || now.getTime() - completedAt(b) <= maxAge)));
  const oldestKept = Math.min(...kept.map(createdAt));
  const failed = own.filter((b) => b.status?.phase === 'Failed' && kept.length > 0 && createdAt(b) < oldestKept);
  return [...completed.filter((b) => !kept.includes(b)), ...failed].sort((a, b) => createdAt(a) - createdAt(b)).map((b) => b.metadata.name);
}
