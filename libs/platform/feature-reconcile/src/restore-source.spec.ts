import type { V1Secret } from '@kubernetes/client-node';
import { KINDS, type KvBackup, type KvDatabase } from '@restash/shared/util-resources';
import { type RestoreReads, restoreSourceOf } from './restore-source';

const refs = { accessKeyIdSecretRef: { name: 's3', key: 'id' }, secretAccessKeySecretRef: { name: 's3', key: 'secret' } };
const location = { endpoint: 'http://s3.engines:8333', region: 'us-east-1', bucket: 'kv-backups', forcePathStyle: true, ...refs, key: 'shop/main/main-1.rdb' };
const sha256 = 'a'.repeat(64);

function database(namespace: string, restore: unknown): KvDatabase {
  return { apiVersion: 'restash.dev/v1alpha1', kind: 'KvDatabase', metadata: { name: 'copy', namespace, uid: 'uid-copy' }, spec: KINDS.KvDatabase.spec.parse({ restore }) as KvDatabase['spec'] };
}

function backup(namespace: string, status: KvBackup['status']): KvBackup {
  return { apiVersion: 'restash.dev/v1alpha1', kind: 'KvBackup', metadata: { name: 'main-1', namespace }, spec: { database: 'main' }, status };
}

/** Fakes of the reads: KvBackups and Secrets by `namespace/name`. */
function reads(backups: KvBackup[], secrets: Record<string, Record<string, string>>): RestoreReads {
  return {
    getKvBackup: async (namespace, name) => backups.find((b) => b.metadata.namespace === namespace && b.metadata.name === name),
    getSecret: async (namespace, name) => {
      const data = secrets[`${namespace}/${name}`];
      return data ? ({ data: Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])) } as V1Secret) : undefined;
    },
  };
}

describe('restoreSourceOf', () => {
  const shopSecrets = { 'shop/s3': { id: 'AKID', secret: 'SECRET' } };

  it("writes a completed KvBackup's place, digest and credentials into a Secret owned by the new database", async () => {
    const source = await restoreSourceOf(database('shop', { backup: { name: 'main-1' } }), reads([backup('shop', { phase: 'Completed', location, sha256 })], shopSecrets));
    expect(source).toEqual({
      secret: {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: expect.objectContaining({
          name: 'redis-copy-restore',
          namespace: 'shop',
          ownerReferences: [{ apiVersion: 'restash.dev/v1alpha1', kind: 'KvDatabase', name: 'copy', uid: 'uid-copy', controller: true, blockOwnerDeletion: true }],
        }),
        type: 'Opaque',
        stringData: {
          RESTORE_ENDPOINT: 'http://s3.engines:8333',
          RESTORE_REGION: 'us-east-1',
          RESTORE_BUCKET: 'kv-backups',
          RESTORE_KEY: 'shop/main/main-1.rdb',
          RESTORE_FORCE_PATH_STYLE: 'true',
          RESTORE_SHA256: sha256,
          RESTORE_ACCESS_KEY_ID: 'AKID',
          RESTORE_SECRET_ACCESS_KEY: 'SECRET',
        },
      },
    });
  });

  it('refuses a missing or failed backup, and waits for one that runs', async () => {
    const db = database('shop', { backup: { name: 'main-1' } });
    expect(await restoreSourceOf(db, reads([], shopSecrets))).toEqual({ refused: 'KvBackup shop/main-1 not found' });
    expect(await restoreSourceOf(db, reads([backup('shop', { phase: 'Failed', message: 'NOPERM' })], shopSecrets))).toEqual({ refused: 'KvBackup shop/main-1 failed: NOPERM' });
    expect(await restoreSourceOf(db, reads([backup('shop', { phase: 'Running' })], shopSecrets))).toEqual({ waiting: 'waiting for KvBackup shop/main-1 to complete (Running)' });
  });

  it("takes another namespace's backup only when it lists this namespace, with that namespace's credentials", async () => {
    const db = database('staging', { backup: { name: 'main-1', namespace: 'shop' } });
    expect(await restoreSourceOf(db, reads([backup('shop', { phase: 'Completed', location, restoreNamespaces: ['qa'] })], shopSecrets))).toEqual({
      refused: "KvBackup shop/main-1 may not be restored into namespace staging: its database's spec.backup.restoreNamespaces does not list it",
    });
    const allowed = await restoreSourceOf(db, reads([backup('shop', { phase: 'Completed', location, restoreNamespaces: ['staging'] })], shopSecrets));
    expect(allowed).toMatchObject({ secret: { metadata: { namespace: 'staging' }, stringData: { RESTORE_ACCESS_KEY_ID: 'AKID' } } });
  });

  it("reads an S3 key's credentials in the database's namespace, and refuses when they are missing", async () => {
    const { key, ...target } = location;
    const db = database('shop', { s3: { ...target, key } });
    expect(await restoreSourceOf(db, reads([], shopSecrets))).toMatchObject({ secret: { stringData: { RESTORE_KEY: key, RESTORE_SECRET_ACCESS_KEY: 'SECRET' } } });
    expect(await restoreSourceOf(db, reads([], {}))).toEqual({ refused: 'Secret s3 (key id) not found in namespace shop' });
  });
});
