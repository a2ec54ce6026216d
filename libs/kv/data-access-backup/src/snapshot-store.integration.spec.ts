import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { type S3Server, startS3Server } from '@restash/platform/util-stack';
import { SnapshotStore } from './snapshot-store';

const CREDENTIALS = { accessKeyId: 'restash-test', secretAccessKey: 'restash-test-secret-key' };

/** Snapshots in a real S3-compatible store (SeaweedFS, deploy/seaweedfs/install.sh), with credentials. */
describe('SnapshotStore on SeaweedFS', () => {
  let server: S3Server;
  let dir: string;
  let store: SnapshotStore;

  beforeAll(async () => {
    server = await startS3Server({ credentials: CREDENTIALS });
    dir = await mkdtemp(join(tmpdir(), 'restash-snapshots-'));
    const admin = new S3Client({ endpoint: server.endpoint, region: server.region, forcePathStyle: true, credentials: CREDENTIALS });
    await admin.send(new CreateBucketCommand({ Bucket: 'backups' }));
    admin.destroy();
    store = new SnapshotStore({ endpoint: server.endpoint, region: server.region, bucket: 'backups', prefix: 'restash/acme/main/', ...CREDENTIALS });
  }, 20 * 60_000);

  afterAll(async () => {
    store?.close();
    await server?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('uploads a snapshot in parts, lists it, gives back the same bytes, and deletes it', async () => {
    const content = randomBytes(12 * 1024 * 1024 + 123); // over lib-storage's 5 MiB part size: a multipart upload
    await writeFile(join(dir, 'out.rdb'), content);
    const put = await store.put('2026-11-28T19-00-00Z.rdb', join(dir, 'out.rdb'));
    expect(put.bytes).toBe(content.length);
    await store.put('2026-11-28T20-00-00Z.rdb', join(dir, 'out.rdb'));
    expect((await store.list()).map((s) => [s.name, s.bytes])).toEqual([
      ['2026-11-28T19-00-00Z.rdb', content.length],
      ['2026-11-28T20-00-00Z.rdb', content.length],
    ]);
    const got = await store.get('2026-11-28T19-00-00Z.rdb', join(dir, 'in.rdb'));
    expect(got.sha256).toBe(put.sha256);
    expect((await readFile(join(dir, 'in.rdb'))).equals(content)).toBe(true);

    await store.delete('2026-11-28T19-00-00Z.rdb');
    expect((await store.list()).map((s) => s.name)).toEqual(['2026-11-28T20-00-00Z.rdb']);
    await expect(store.get('2026-11-28T19-00-00Z.rdb', join(dir, 'gone.rdb'))).rejects.toMatchObject({ name: 'NoSuchKey' });
  });

  it('is refused with other credentials', async () => {
    const stranger = new SnapshotStore({ endpoint: server.endpoint, region: server.region, bucket: 'backups', prefix: 'restash/acme/main/', accessKeyId: 'someone', secretAccessKey: 'else-entirely' });
    try {
      await expect(stranger.list()).rejects.toMatchObject({ $metadata: { httpStatusCode: 403 } });
    } finally {
      stranger.close();
    }
  });
});
