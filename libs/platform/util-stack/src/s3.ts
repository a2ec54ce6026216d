import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { repoRoot } from './paths';
import { answers200, freePorts, inTemporaryDir, installOnce, startProcess } from './process';

/** SeaweedFS's `weed`, built by deploy/seaweedfs/install.sh into the cache the clone's .cache/seaweedfs points at. */
export function weedBin(): string {
  return join(repoRoot(), '.cache/seaweedfs/weed');
}

/** An S3 access key pair that {@link startS3Server} accepts (SeaweedFS `-s3.config` identity with every action). */
export interface S3Credentials {
  accessKeyId: string;
  secretAccessKey: string;
}

/** A running S3-compatible object store on 127.0.0.1. */
export interface S3Server {
  /** `http://127.0.0.1:<port>`: path-style addressing (`<endpoint>/<bucket>/<key>`). */
  endpoint: string;
  /** The region clients sign for (SeaweedFS accepts any; `us-east-1`). */
  region: string;
  /** The accepted credentials; undefined when the server takes anonymous requests. */
  credentials: S3Credentials | undefined;
  /** SIGTERM (SIGKILL after 5 s), then removes its data folder. */
  stop(): Promise<void>;
}

/**
 * Starts SeaweedFS (`weed mini`: master, volume server, filer and S3 gateway in one process) with its data in a new
 * temporary folder, every port it opens on 127.0.0.1 and chosen free (its defaults, e.g. 9333 and 8888, would collide
 * with other stacks), telemetry off (nothing leaves the machine), the admin UI off. With `credentials` only that
 * key pair is accepted; without, anonymous requests are. Builds `weed` first when it is missing (installOnce of
 * deploy/seaweedfs/install.sh: about 9 minutes the first time on 2 cores, then cached).
 * @throws Error when the build fails, or when the S3 port does not answer in 60 s
 */
export async function startS3Server(options: { credentials?: S3Credentials; logFile?: string } = {}): Promise<S3Server> {
  await installOnce('deploy/seaweedfs/install.sh');
  const bin = weedBin();
  if (!existsSync(bin)) throw new Error(`${bin} is missing: run bash deploy/seaweedfs/install.sh`);
  return inTemporaryDir('restash-s3-', async (dir) => {
    const [master, masterGrpc, volume, volumeGrpc, filer, filerGrpc, s3, s3Grpc, admin, adminGrpc, metrics, debug, iceberg, lance] = await freePorts(14);
    const args = [
      'mini',
      `-dir=${join(dir, 'data')}`,
      '-ip=127.0.0.1',
      '-ip.bind=127.0.0.1',
      '-master.telemetry=false',
      '-admin.ui=false',
      '-admin.port.legacy=0',
      `-master.port=${master}`,
      `-master.port.grpc=${masterGrpc}`,
      `-volume.port=${volume}`,
      `-volume.port.grpc=${volumeGrpc}`,
      `-filer.port=${filer}`,
      `-filer.port.grpc=${filerGrpc}`,
      `-s3.port=${s3}`,
      `-s3.port.grpc=${s3Grpc}`,
      `-s3.port.iceberg=${iceberg}`,
      `-s3.port.lance=${lance}`,
      `-admin.port=${admin}`,
      `-admin.port.grpc=${adminGrpc}`,
      `-metricsPort=${metrics}`,
      `-debug.port=${debug}`,
    ];
    if (options.credentials) {
      const config = join(dir, 's3.json');
      const identity = { name: 'restash', credentials: [{ accessKey: options.credentials.accessKeyId, secretKey: options.credentials.secretAccessKey }], actions: ['Admin', 'Read', 'Write', 'List', 'Tagging'] };
      await writeFile(config, JSON.stringify({ identities: [identity] }), { mode: 0o600 });
      args.push(`-s3.config=${config}`);
    }
    const running = await startProcess({
      name: 'seaweedfs',
      command: bin,
      args,
      ...(options.logFile !== undefined ? { logFile: options.logFile } : {}),
      // The S3 gateway answers its health check once the filer behind it is up.
      ready: () => answers200(s3 ?? 0, '/healthz'),
      readyTimeoutMs: 60_000,
    });
    return {
      endpoint: `http://127.0.0.1:${s3}`,
      region: 'us-east-1',
      credentials: options.credentials,
      stop: () => running.stop(),
    };
  });
}
