import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { type RedisServer, kvEngine, startRedisServer } from '@restash/platform/util-stack';
import { COMMAND_TIMED_OUT } from './command-runner';
import { KvBackend } from './kv-backend';

const ADMIN = { username: 'restash-gateway', password: 'backend-test-password' };

/**
 * A Redis server of the KV engine with the gateway's admin user, an admin connection to it, and a KvBackend on it with
 * REDIS_COMMAND_TIMEOUT_MS `commandTimeoutMs`; started before the describe's tests and stopped after them.
 */
function useBackend(commandTimeoutMs: number): { server: RedisServer; admin: Redis; backend: KvBackend } {
  const world = {} as { server: RedisServer; admin: Redis; backend: KvBackend };
  beforeAll(async () => {
    world.server = await startRedisServer({ engine: kvEngine().name, config: ['user default off', `user ${ADMIN.username} on >${ADMIN.password} ~* &* +@all`], auth: ADMIN });
    world.admin = new Redis({ port: world.server.port, host: '127.0.0.1', ...ADMIN });
    world.backend = new KvBackend(`redis://${ADMIN.username}:${ADMIN.password}@127.0.0.1:${world.server.port}/0`, { poolSize: 1, transactionPoolSize: 1, commandTimeoutMs, idleTimeoutMs: 60_000 });
  });
  afterAll(async () => {
    await world.backend?.close();
    world.admin?.disconnect();
    await world.server?.stop();
  });
  return world;
}

describe(`KvBackend ACL user connections (${kvEngine().name})`, () => {
  const world = useBackend(0);

  it('serves a request that holds a dropped user’s connection for a grace, then closes it; new requests authenticate again', async () => {
    const { admin, backend } = world;
    await admin.set('k', 'v');
    await admin.call('ACL', 'SETUSER', 'acme.main:app', 'on', '>old', '~*', '+@read');
    const held = await backend.asUser('acme.main:app', 'old');
    expect(await held.run(['GET', 'k'])).toEqual(Buffer.from('v'));

    // The password changes (ACL SETUSER on any replica; each replica drops its connections of the user).
    await admin.call('ACL', 'SETUSER', 'acme.main:app', '<old', '>new');
    backend.dropUser('acme.main:app');
    await sleep(10); // the request's own work between authentication and its command (admission, parsing)
    // A request authenticated before the change still runs on the connection it holds …
    expect(await held.run(['GET', 'k'])).toEqual(Buffer.from('v'));
    // … a new one authenticates again: the old password is refused, the new one works.
    await expect(backend.asUser('acme.main:app', 'old')).rejects.toThrow(/WRONGPASS/);
    expect(await (await backend.asUser('acme.main:app', 'new')).run(['GET', 'k'])).toEqual(Buffer.from('v'));
    // After the grace the old connection is closed.
    await sleep(2_500);
    await expect(held.run(['GET', 'k'])).rejects.toThrow(/Connection is closed/);
  });
});

describe(`KvBackend command deadlines (${kvEngine().name})`, () => {
  const world = useBackend(300);
  beforeAll(() => world.backend.run(['SET', 'k', 'v']));

  it('fails the commands of a server that stopped answering after the timeout, no sooner, and serves again once it answers', async () => {
    const { admin, backend } = world;
    // CLIENT PAUSE holds every other client's commands unanswered for 1.5 s.
    await admin.call('CLIENT', 'PAUSE', '1500', 'ALL');
    const started = Date.now();
    const single = backend.run(['GET', 'k']).then(() => 'answered', (error: Error) => error.message);
    const pipeline = backend.pipeline([['GET', 'k'], ['GET', 'k']]).then(() => 'answered', (error: Error) => error.message);
    const failed = await Promise.all([single, pipeline]);
    const waited = Date.now() - started;
    expect(failed).toEqual([COMMAND_TIMED_OUT, COMMAND_TIMED_OUT]);
    expect(waited).toBeGreaterThanOrEqual(300);
    expect(waited).toBeLessThan(1_500); // the deadline, not the pause, ended them
    // The connection stays usable: once the pause ends, the late replies are dropped and new commands are answered.
    await sleep(1_600 - waited);
    expect(await backend.run(['GET', 'k'])).toEqual(Buffer.from('v'));
    expect(await backend.pipeline([['GET', 'k']])).toEqual([{ ok: true, reply: Buffer.from('v') }]);
  });

  it('leaves a command answered within the timeout alone', async () => {
    const { admin, backend } = world;
    await admin.call('CLIENT', 'PAUSE', '150', 'ALL');
    expect(await backend.run(['GET', 'k'])).toEqual(Buffer.from('v'));
  });
});
