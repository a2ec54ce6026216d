import { execFileSync } from 'node:child_process';
import { type S3Server, startS3Server } from './s3';

/** The TCP ports a process listens on, with their addresses (from `ss`). */
function listening(pid: number): string[] {
  const lines = execFileSync('ss', ['-ltnpH'], { encoding: 'utf8' }).split('\n');
  return lines.filter((l) => l.includes(`pid=${pid},`)).map((l) => l.trim().split(/\s+/)[3] ?? '');
}

/**
 * The S3-compatible object store of the KV backup tests (issue 32): SeaweedFS `weed mini` built by
 * deploy/seaweedfs/install.sh, started on loopback only, its data in a temporary folder.
 */
describe('startS3Server (SeaweedFS)', () => {
  let server: S3Server;

  beforeAll(async () => {
    server = await startS3Server();
  }, 20 * 60_000);

  afterAll(async () => {
    await server?.stop();
  });

  it('keeps an object in a bucket and gives it back, listening on 127.0.0.1 only', async () => {
    expect((await fetch(`${server.endpoint}/backups`, { method: 'PUT' })).status).toBe(200);
    const body = Buffer.from(Array.from({ length: 70_000 }, (_, i) => i % 251));
    expect((await fetch(`${server.endpoint}/backups/kv/acme.main/1.rdb`, { method: 'PUT', body })).status).toBe(200);
    const back = await fetch(`${server.endpoint}/backups/kv/acme.main/1.rdb`);
    expect(back.status).toBe(200);
    expect(Buffer.from(await back.arrayBuffer()).equals(body)).toBe(true);
    expect((await fetch(`${server.endpoint}/backups/kv/acme.main/2.rdb`)).status).toBe(404);

    const pid = Number(execFileSync('pgrep', ['-f', `weed mini .*-s3.port=${new URL(server.endpoint).port}`], { encoding: 'utf8' }).trim().split('\n')[0]);
    const addresses = listening(pid);
    expect(addresses.length).toBeGreaterThan(0);
    expect(addresses.filter((a) => !a.startsWith('127.0.0.1:'))).toEqual([]);
  });
});
