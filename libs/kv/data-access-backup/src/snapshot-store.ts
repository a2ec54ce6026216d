import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';

/** Where a KV database's snapshots go: an S3-compatible bucket and a key prefix (issue 32, `spec.backup`). */
export interface SnapshotStoreConfig {
  /** The service's URL for S3-compatible stores (SeaweedFS, MinIO, Ceph); absent for AWS S3 itself. */
  endpoint?: string;
  region: string;
  bucket: string;
  /** Prepended to every object name, e.g. `restash/acme/main/`. */
  prefix: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** `<endpoint>/<bucket>/<key>` addressing (most self-hosted stores); virtual-hosted otherwise. */
  forcePathStyle?: boolean;
}

/** One stored snapshot: its name under the prefix, size in bytes, and, for what this process wrote or read, its SHA-256. */
export interface StoredSnapshot {
  name: string;
  bytes: number;
  sha256?: string;
  lastModified?: Date;
}

/**
 * A KV database's snapshots (RDB files, takeRdbSnapshot) in an S3-compatible object store, through the AWS SDK
 * (`@aws-sdk/client-s3`; uploads in parts with `@aws-sdk/lib-storage`, so a snapshot of any size streams from disk).
 * Object names are the prefix and the snapshot's name.
 */
export class SnapshotStore {
  private readonly client: S3Client;

  constructor(private readonly config: SnapshotStoreConfig) {
    this.client = new S3Client({
      region: config.region,
      ...(config.endpoint !== undefined ? { endpoint: config.endpoint } : {}),
      forcePathStyle: config.forcePathStyle ?? config.endpoint !== undefined,
      credentials: { accessKeyId: config.accessKeyId, secretAccessKey: config.secretAccessKey },
    });
  }

  /**
   * Uploads `file` as snapshot `name`.
   * @returns its size and SHA-256 (hex) as read from the file while uploading
   * @throws the SDK's error (e.g. `InvalidAccessKeyId`, `NoSuchBucket`) when the store refuses it
   */
  async put(name: string, file: string): Promise<StoredSnapshot> {
    const hash = createHash('sha256');
    const body = createReadStream(file).pipe(digesting(hash));
    await new Upload({ client: this.client, params: { Bucket: this.config.bucket, Key: this.key(name), Body: body, ContentType: 'application/octet-stream' } }).done();
    return { name, bytes: (await stat(file)).size, sha256: hash.digest('hex') };
  }

  /**
   * Downloads snapshot `name` into `file`.
   * @returns its size and SHA-256 (hex)
   * @throws the SDK's error (`NoSuchKey` for a snapshot that is not there)
   */
  async get(name: string, file: string): Promise<StoredSnapshot> {
    const answer = await this.client.send(new GetObjectCommand({ Bucket: this.config.bucket, Key: this.key(name) }));
    if (!answer.Body) throw new Error(`snapshot ${name}: the store answered without a body`);
    const hash = createHash('sha256');
    await pipeline(answer.Body as NodeJS.ReadableStream, digesting(hash), createWriteStream(file, { mode: 0o600 }));
    return { name, bytes: (await stat(file)).size, sha256: hash.digest('hex') };
  }

  /** The snapshots under the prefix, oldest first. */
  async list(): Promise<StoredSnapshot[]> {
    const found: StoredSnapshot[] = [];
    let token: string | undefined;
    do {
      const page = await this.client.send(new ListObjectsV2Command({ Bucket: this.config.bucket, Prefix: this.config.prefix, ContinuationToken: token }));
      for (const object of page.Contents ?? []) {
        if (!object.Key) continue;
        found.push({ name: object.Key.slice(this.config.prefix.length), bytes: object.Size ?? 0, ...(object.LastModified ? { lastModified: object.LastModified } : {}) });
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return found.sort((a, b) => (a.lastModified?.getTime() ?? 0) - (b.lastModified?.getTime() ?? 0));
  }

  /** Deletes snapshot `name` (nothing happens when it is not there, as S3 does). */
  async delete(name: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.config.bucket, Key: this.key(name) }));
  }

  close(): void {
    this.client.destroy();
  }

  private key(name: string): string {
    return `${this.config.prefix}${name}`;
  }
}

/** A pass-through stream that feeds what goes through it to `hash`. */
function digesting(hash: ReturnType<typeof createHash>): Transform {
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      hash.update(chunk);
      done(null, chunk);
    },
  });
}
