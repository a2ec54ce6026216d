// The KV API's kinds (split from kinds.ts, which exports them): KvDatabase's spec (its Redis server, managed or
// external; limits; durability; backups to an S3-compatible bucket and the snapshot it starts from) and status,
// and KvBackup's spec and status (docs/operations.md, "KV databases: backups and restore").
import { CronExpressionParser } from 'cron-parser';
import { z } from 'zod';
import { KV_MAX_REQUEST_BYTES, dnsLabel, httpUrl, limits, quantity, secretKeyRef, withRule, withTransitionRule } from './shared';
import { dateTime, statusSchema } from './status';

/** The most Redis servers of a managed database (`spec.redis.managed.replicas`). */
export const MAX_MANAGED_REPLICAS = 5;

/** The characters and field count of a cron expression, for the API server (CEL cannot parse cron): 5 or 6 fields. */
const CRON_SHAPE = /^[0-9A-Za-z*?/,#-]+( +[0-9A-Za-z*?/,#-]+){4,5}$/;

/**
 * Whether `value` is a cron expression restash runs (cron-parser's grammar: lists, ranges, steps, month and day
 * names): 5 fields (minute, hour, day of month, month, day of week) or 6 with seconds first, as CloudNativePG's
 * ScheduledBackup takes them; always in UTC.
 */
export function isCronSchedule(value: string): boolean {
  if (!CRON_SHAPE.test(value)) return false;
  try {
    CronExpressionParser.parse(value, { tz: 'UTC' });
    return true;
  } catch {
    return false;
  }
}

/** An age as a count and a unit: `s`, `m`, `h`, `d` or `w` (`30d`). */
export const AGE = /^[1-9][0-9]{0,5}[smhdw]$/;

/** An S3 bucket name (the AWS rules restash checks: 3–63 of a-z 0-9 . -, starting and ending with a letter or digit). */
const bucketName = z.string().regex(/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/, 'must be an S3 bucket name: 3–63 of a-z 0-9 . -');

/** Where snapshots are kept: an S3-compatible bucket, a key prefix and the credentials (the namespace's Secrets). */
const s3TargetFields = {
  endpoint: httpUrl.optional().describe('The S3 endpoint of a self-hosted store (SeaweedFS, MinIO, Ceph RGW); absent for AWS S3.'),
  region: z.string().min(1).max(64).default('us-east-1').describe("The bucket's region."),
  bucket: bucketName.describe('The bucket; it must exist.'),
  forcePathStyle: z.boolean().default(true).describe('<endpoint>/<bucket>/<key> addressing (most self-hosted stores); false for virtual-hosted buckets.'),
  accessKeyIdSecretRef: secretKeyRef.describe("Secret key holding the access key id."),
  secretAccessKeySecretRef: secretKeyRef.describe("Secret key holding the secret access key."),
};
const s3Key = z.string().min(1).max(900).regex(/^[A-Za-z0-9!_.*'()\/-]+$/, "must be an object key of A-Z a-z 0-9 ! _ . * ' ( ) / -");
const s3Target = z.strictObject({
  ...s3TargetFields,
  prefix: s3Key.optional().describe('Prepended to every snapshot key; default `<namespace>/<database>/`.'),
});
export type S3Target = z.output<typeof s3Target>;

/** `KvDatabase.spec.backup`: where snapshots go, when they are taken, how many are kept. */
const kvBackupPolicy = z.strictObject({
  schedule: withRule(
    z.string().max(256),
    {
      rule: `self.matches('${CRON_SHAPE.source}')`,
      message: 'must be a cron expression of 5 fields (minute hour day-of-month month day-of-week) or 6 (seconds first), in UTC',
    },
    isCronSchedule,
  )
    .optional()
    .describe('When to take a backup: cron, 5 fields or 6 with seconds first, UTC; without it only KvBackup objects take them.'),
  retention: z
    .strictObject({
      count: z.number().int().min(1).max(1000).optional().describe('Keep at most this many completed backups of this database, the newest.'),
      maxAge: z.string().regex(AGE, 'must be a count and a unit: s, m, h, d or w (30d)').optional().describe('Delete completed backups older than this (30d, 12h).'),
    })
    .optional()
    .describe('Which completed backups are kept; the newest completed one is always kept.'),
  deletionPolicy: z.enum(['Retain', 'Delete']).default('Retain').describe('Retain: the backups outlive the database; Delete: deleted with it.'),
  s3: s3Target.describe('The S3-compatible bucket the snapshots go to.'),
  restoreNamespaces: z.array(dnsLabel).max(100).default([]).describe('Other namespaces whose KvDatabases may restore from these backups.'),
});

/** `KvDatabase.spec.restore`: the snapshot a new database starts from (a KvBackup, or an object in a bucket). */
const kvRestoreSource = withRule(
  z.strictObject({
    backup: z
      .strictObject({
        name: dnsLabel.describe('A KvBackup name.'),
        namespace: dnsLabel.optional().describe("Its namespace; default the database's. Another namespace's backup needs that database's backup.restoreNamespaces to name this one."),
      })
      .optional()
      .describe('A completed KvBackup.'),
    s3: z
      .strictObject({ ...s3TargetFields, key: s3Key.describe("The snapshot's object key.") })
      .optional()
      .describe('An RDB snapshot in an S3-compatible bucket.'),
  }),
  { rule: 'has(self.backup) != has(self.s3)', message: 'set one of backup and s3' },
  (source) => (source.backup === undefined) !== (source.s3 === undefined),
);

/** `KvDatabase.spec`: where the database's Redis is (managed by the operator, or an external one) and its limits. */
const kvDatabaseFields = z.strictObject({
  redis: withRule(
    z.strictObject({
      managed: withTransitionRule(
        withTransitionRule(
        z.strictObject({
          storage: quantity.default('1Gi').describe('Size of each Redis volume (a quantity).'),
          storageClassName: z.string().min(1).max(253).optional().describe("StorageClass of the volumes; default the cluster's default class."),
          replicas: z
            .number()
            .int()
            .min(1)
            .max(MAX_MANAGED_REPLICAS)
            .default(1)
            .describe('Redis servers: 1, or 2 to 5 (a primary and replicas, with three Redis Sentinels that fail over).'),
          engine: withTransitionRule(z.enum(['redis', 'valkey']), {
            rule: 'self == oldSelf',
            message: 'engine is set when a database is created: a Redis 7.4+ data file is not one Valkey reads (back up and restore into a new database)',
          })
            .default('redis')
            .describe("The server: redis (the operator's MANAGED_REDIS_IMAGE) or valkey (MANAGED_VALKEY_IMAGE); set at creation."),
        }),
          { rule: 'oldSelf.replicas < 2 || self.replicas >= 2', message: 'a replicated database keeps at least 2 replicas (its sentinels and clients follow the primary)', fieldPath: '.replicas' },
        ),
        { rule: 'quantity(self.storage).compareTo(quantity(oldSelf.storage)) >= 0', message: 'storage cannot shrink (a volume only grows)', fieldPath: '.storage' },
      )
        .optional()
        .describe('A Redis server the operator runs for this database, with a volume of its own.'),
      external: z
        .strictObject({
          urlSecretRef: secretKeyRef.describe("Secret key holding the Redis URL (redis://, rediss://, or a Redis Sentinel deployment's redis+sentinel://host[:port],…/<primary name>[/<db>]) with the gateway's credentials."),
        })
        .optional()
        .describe('A Redis server run elsewhere, backing this database alone.'),
    }),
    { rule: '!(has(self.managed) && has(self.external))', message: 'set one of managed and external, not both' },
    (redis) => !(redis.managed && redis.external),
  )
    // Spelled out: the API server runs the rules below it (managed's transition rule) on this default as written.
    .prefault({ managed: { storage: '1Gi', replicas: 1, engine: 'redis' } })
    .describe('The Redis server of the database: managed (the default) or external.'),
  limits: limits(KV_MAX_REQUEST_BYTES),
  durability: z
    .enum(['async', 'replicated'])
    .default('async')
    .describe('async: a write is acknowledged once the primary has it; replicated: once a replica has it too (WAIT), else 503.'),
  backup: kvBackupPolicy.optional().describe('Backups of the database: RDB snapshots in an S3-compatible bucket, on a schedule and on demand (KvBackup).'),
  restore: kvRestoreSource.optional().describe('The snapshot a new managed database starts from; set at creation only.'),
});

export const kvDatabaseSpecSchema = withTransitionRule(
  withRule(
    withRule(
      kvDatabaseFields,
      {
        rule: "self.durability != 'replicated' || !has(self.redis.managed) || self.redis.managed.replicas >= 2",
        message: 'durability replicated needs replicas: a managed database with replicas of 2 or more',
        fieldPath: '.durability',
      },
      (spec) => spec.durability !== 'replicated' || spec.redis.managed === undefined || spec.redis.managed.replicas >= 2,
    ),
    { rule: '!has(self.restore) || !has(self.redis.external)', message: 'restore is for managed databases: an external Redis is restored where it runs', fieldPath: '.restore' },
    (spec) => spec.restore === undefined || spec.redis.external === undefined,
  ),
  {
    rule: 'has(self.restore) == has(oldSelf.restore) && (!has(self.restore) || self.restore == oldSelf.restore)',
    message: 'restore is set when a database is created and never changed: a restore into an existing database is refused (create a new KvDatabase)',
  },
);
export type KvDatabaseSpec = z.output<typeof kvDatabaseSpecSchema>;

/** A KvDatabase's status: the shared fields, and those of its backups (written by the operator's backup controller). */
export const kvDatabaseStatusSchema = statusSchema.extend({
  lastSuccessfulBackup: z.string().optional().describe('The newest completed KvBackup of this database.'),
  lastSuccessfulBackupTime: dateTime.optional().describe('When it completed.'),
  primary: z.string().optional().describe('Replicated databases: the pod of the primary, as the sentinels name it.'),
  replicas: z
    .array(
      z.strictObject({
        name: z.string(),
        state: z.string().describe('online, or a state of the initial sync'),
        lagSeconds: z.number().int().min(0).describe('Seconds since it last acknowledged the replication stream.'),
        behindBytes: z.number().int().min(0).describe('Bytes of the stream it has not acknowledged yet.'),
      }),
    )
    .max(8)
    .optional()
    .describe('Replicated databases: the replicas as the primary sees them.'),
  lastScheduleTime: dateTime.optional().describe('When spec.backup.schedule last made a KvBackup.'),
  nextScheduleTime: dateTime.optional().describe('When it makes the next.'),
});
export type KvDatabaseStatus = z.output<typeof kvDatabaseStatusSchema>;

/** `KvBackup.spec`: the database it backs up; the database's `spec.backup` says where to. */
export const kvBackupSpecSchema = withTransitionRule(
  z.strictObject({
    database: dnsLabel.describe("The KvDatabase in this namespace to back up; its spec.backup.s3 says where the snapshot goes."),
  }),
  { rule: 'self == oldSelf', message: 'a KvBackup is never changed: create another' },
);
export type KvBackupSpec = z.output<typeof kvBackupSpecSchema>;

/** The phases of a KvBackup: Pending (not started), Running, Completed (its snapshot is stored), Failed (see message). */
export const KV_BACKUP_PHASES = ['Pending', 'Running', 'Completed', 'Failed'] as const;
export type KvBackupPhase = (typeof KV_BACKUP_PHASES)[number];

/** Where a KvBackup's snapshot is: the bucket, its key and the credentials to read it (copied from the database's spec.backup.s3). */
const snapshotLocation = z.strictObject({ ...s3TargetFields, key: s3Key });
export type SnapshotLocation = z.output<typeof snapshotLocation>;

/** A KvBackup's status (CloudNativePG's Backup status as the model): phase, times, size and digest of the snapshot, where it is. */
export const kvBackupStatusSchema = z.strictObject({
  phase: z.enum(KV_BACKUP_PHASES).optional(),
  message: z.string().max(32_768).optional().describe('Why it failed, or what it waits for.'),
  startedAt: dateTime.optional(),
  completedAt: dateTime.optional(),
  bytes: z.number().int().min(0).optional().describe("The snapshot's size in bytes."),
  sha256: z.string().regex(/^[0-9a-f]{64}$/).optional().describe("The snapshot's SHA-256, as uploaded (hex)."),
  location: snapshotLocation.optional().describe('Where the snapshot is stored.'),
  restoreNamespaces: z.array(dnsLabel).max(100).optional().describe("Other namespaces that may restore from it (the database's spec.backup.restoreNamespaces when it was taken)."),
});
export type KvBackupStatus = z.output<typeof kvBackupStatusSchema>;
