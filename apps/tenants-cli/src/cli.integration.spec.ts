import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, readdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { RuntimeStore, queueProjectId, registryKeys, registrySealFromEnv } from '@restash/shared/data-access-registry';
import { type RedisServer, repoRoot, startRedisServer } from '@restash/platform/util-stack';

const ADMIN = { username: 'restash-gateway', password: 'test-admin-password' };

/** `bin/tenants` from its TypeScript sources: its exit code and output. */
function tenants(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['-r', '@swc-node/register', join(repoRoot(), 'apps/tenants-cli/src/main.ts'), ...args],
      { env: { ...process.env, SWC_NODE_PROJECT: join(repoRoot(), 'tsconfig.base.json'), ...env } },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('tenants apply and delete', () => {
  let control: RedisServer;
  let data: RedisServer;
  let dir: string;
  let file: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    [control, data] = await Promise.all([
      startRedisServer(),
      startRedisServer({ config: ['user default off', `user ${ADMIN.username} on >${ADMIN.password} ~* &* +@all`], auth: ADMIN }),
    ]);
    dir = await mkdtemp(join(tmpdir(), 'restash-tenants-'));
    file = join(dir, 'tenants.yaml');
    await writeFile(
      file,
      `apiVersion: v1
kind: Secret
metadata: { name: main-redis, namespace: acme }
stringData:
  url: redis://\${ADMIN_USER}:\${ADMIN_PASSWORD}@127.0.0.1:${data.port}/0
---
apiVersion: restash.dev/v1alpha1
kind: KvDatabase
metadata: { name: main, namespace: acme }
spec:
  redis:
    external:
      urlSecretRef: { name: main-redis, key: url }
---
apiVersion: restash.dev/v1alpha1
kind: QueueProject
metadata: { name: jobs, namespace: acme }
`,
    );
    env = {
      CONTROL_REDIS_URL: control.url,
      QUEUE_REDIS_URL: control.url,
      ADMIN_USER: ADMIN.username,
      ADMIN_PASSWORD: ADMIN.password,
      // The key the registry seals the Redis URL with (data-access-registry sealed.ts).
      REGISTRY_SEAL_KEY: randomBytes(32).toString('base64'),
    };
  }, 60_000);

  afterAll(async () => {
    await Promise.all([control?.stop(), data?.stop()]);
  });

  it('refuses a file with a resource it cannot apply, naming it, and writes nothing', async () => {
    const bad = join(dir, 'bad.yaml');
    await writeFile(bad, 'apiVersion: restash.dev/v1alpha1\nkind: VectorIndex\nmetadata: { name: docs, namespace: other }\nspec: { dimension: 3 }\n');
    const refused = await tenants(['apply', '-f', bad, '--secrets-dir', join(dir, 'bad-secrets')], env);
    expect(refused).toMatchObject({ code: 1, stdout: '' });
    expect(refused.stderr).toContain('VectorIndex other/docs: NotSupported: the applier has no Qdrant (QDRANT_URL)');
    const registry = new Redis(control.url);
    expect(await registry.exists(registryKeys.tenant('other'))).toBe(0);
    registry.disconnect();
  });

  it('names what it could not delete and exits 1, apply refuses meanwhile, and a re-run finishes', async () => {
    const secrets = ['--secrets-dir', join(dir, 'secrets')];
    expect((await tenants(['apply', '-f', file, ...secrets], env)).code).toBe(0);
    const kv = new Redis({ host: '127.0.0.1', port: data.port, ...ADMIN });
    await kv.set('left', 'behind');
    kv.disconnect();

    await data.kill();
    let deleted: Awaited<ReturnType<typeof tenants>>;
    try {
      deleted = await tenants(['delete', 'acme', ...secrets], env);
      expect(deleted.code).toBe(1);
      expect(deleted.stderr).toContain('KV database acme.main');
      expect(deleted.stderr).toContain('tenants delete acme');
      expect(deleted.stderr).not.toContain('queue project acme.jobs');
      expect(await readdir(join(dir, 'secrets'))).toEqual([]); // the old tokens are forgotten at once

      const refused = await tenants(['apply', '-f', file, ...secrets], env);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toMatch(/tenant\/acme is being deleted.*KV database acme\.main/);
    } finally {
      await data.restart();
    }

    deleted = await tenants(['delete', 'acme', ...secrets], env);
    expect(deleted).toMatchObject({ code: 0, stdout: 'tenant/acme deleted with the data of KV database acme.main\n' });
    const check = new Redis({ host: '127.0.0.1', port: data.port, ...ADMIN });
    expect(await check.dbsize()).toBe(0);
    check.disconnect();
    const registry = new Redis(control.url);
    expect(await registry.exists(registryKeys.tenantTeardown('acme'))).toBe(0);
    registry.disconnect();
    expect((await tenants(['apply', '-f', file, ...secrets], env)).code).toBe(0);
  }, 60_000);

  it("writes a queue project's rotated signing keys to the tokens file on the next apply, and keeps them in the registry", async () => {
    const projectFile = join(dir, 'rotation.yaml');
    await writeFile(projectFile, 'apiVersion: restash.dev/v1alpha1\nkind: QueueProject\nmetadata: { name: jobs, namespace: rota }\n');
    const secrets = ['--secrets-dir', join(dir, 'rotation-secrets')];
    const tokensFile = join(dir, 'rotation-secrets', 'rota.json');
    const fileKeys = async () => {
      const { queue } = JSON.parse(await readFile(tokensFile, 'utf8')) as { queue: Record<string, { standard: string; currentSigningKey: string; nextSigningKey: string }> };
      return queue['jobs'];
    };
    expect((await tenants(['apply', '-f', projectFile, ...secrets], env)).code).toBe(0);
    const created = await fileKeys();

    // Two rotations (what POST /v2/keys/rotate runs): the file's keys of creation no longer verify anything.
    const registry = new Redis(control.url);
    try {
      const runtime = new RuntimeStore(registry, registrySealFromEnv(env));
      const id = queueProjectId('rota', 'jobs');
      await runtime.rotateQueueSigningKeys(id);
      const rotated = await runtime.rotateQueueSigningKeys(id);

      const applied = await tenants(['apply', '-f', projectFile, ...secrets], env);
      expect(applied).toMatchObject({ code: 0, stderr: '' });
      expect(applied.stdout).toContain(`queue project jobs: signing keys rotated since the last apply; ${join(dir, 'rotation-secrets')}/rota.json holds the registry's`);
      expect(await fileKeys()).toEqual({ ...created, currentSigningKey: rotated?.current, nextSigningKey: rotated?.next });
      expect((await runtime.queueSigningKeys([id])).get(id)).toEqual(rotated);

      // Nothing changed since: the next apply says nothing about keys.
      const again = await tenants(['apply', '-f', projectFile, ...secrets], env);
      expect(again.stdout).not.toContain('signing keys');
    } finally {
      registry.disconnect();
    }
  }, 60_000);
});
