import { Redis } from 'ioredis';
import { RegistryWriter, generateToken, tenantDocumentSchema } from '@restash/shared/data-access-registry';
import { call, eventually } from '@restash/shared/util-testing';
import { KV_TEST_ADMIN, type KvStack, startKvStack } from './testing/kv-stack';

/**
 * Issue 11, KV: a hostile tenant (acme) tries every known way to reach a neighbour (rival) through
 * the gateway, with its standard, read-only and ACL tokens. Redis does not isolate logical
 * databases, so the invariant is "a Redis server backs at most one KV database"
 * (docs/kv.md, "KV: one Redis server per database"): each of these tenants has a server of its own, the
 * gateway refuses a database whose server already backs another, and the neighbour's data is
 * checked on its own server.
 */
describe('kv-gateway tenant isolation', () => {
  let stack: KvStack;
  let hostile: { standard: string; readonly: string; acl: string };
  let neighbour: string;
  let victim: Redis;
  const url = (path = '') => `${stack.url}${path}`;
  const as = (token: string, body: unknown) => call(url(), { token, body });
  const result = async (token: string, body: unknown) => {
    const response = await as(token, body);
    expect(response).toMatchObject({ status: 200 });
    return (response.body as { result: unknown }).result;
  };
  /** The hostile tenant's token kinds; tests read `hostile[role]` once the stack is up. */
  const ROLES = ['standard', 'readonly', 'acl'] as const;
  const RIVAL_LIBRARY = "#!lua name=shared_name\nredis.register_function('greet', function(keys, args) return 'rival says ' .. args[1] end)";

  /** The neighbour's data, read on its own server, is exactly what it wrote. */
  const neighbourIntact = async () => {
    expect(await victim.get('k')).toBe('secret');
    expect(await victim.dbsize()).toBe(2);
    expect(await as(neighbour, ['FCALL', 'greet', '0', 'x'])).toMatchObject({ status: 200, body: { result: 'rival says x' } });
  };

  beforeAll(async () => {
    stack = await startKvStack({
      acme: [{ name: 'main' }],
      rival: [{ name: 'main', db: 3 }],
      leaving: [{ name: 'main' }],
      squatter: [{ name: 'main', db: 5, onServerOf: 'rival/main' }],
    });
    const acme = stack.tokens('acme', 'main');
    neighbour = stack.tokens('rival', 'main').standard;
    victim = stack.admin('rival', 'main');
    await result(neighbour, ['SET', 'k', 'secret']);
    await result(neighbour, ['PFADD', 'visitors', 'a']);
    await result(neighbour, ['FUNCTION', 'LOAD', RIVAL_LIBRARY]);
    await result(acme.standard, ['SET', 'k', 'mine']);
    await result(acme.standard, ['ACL', 'SETUSER', 'root', 'on', '>pw', '~*', '&*', '+@all']);
    hostile = { ...acme, acl: (await result(acme.standard, ['ACL', 'RESTTOKEN', 'root', 'pw'])) as string };
  });
  afterAll(() => stack.stop());

  describe('scripts cannot reach another database', () => {
    it.each(ROLES)('EVAL with SELECT then GET, with the %s token, reads nothing of the neighbour', async (role) => {
      const token = hostile[role];
      const scan = "for db = 0, 15 do redis.call('SELECT', db) local v = redis.call('GET', 'k') if v and v ~= 'mine' then return v end end return 'none'";
      expect(await as(token, ['EVAL', scan, '0'])).toMatchObject({ status: 200, body: { result: 'none' } });
      await neighbourIntact();
    });

    it.each(ROLES)('EVAL with SELECT then SET, FLUSHDB, FLUSHALL, SWAPDB, MOVE or COPY … DB, with the %s token, changes nothing of the neighbour', async (role) => {
      const token = hostile[role];
      for (const script of [
        "for db = 0, 15 do redis.call('SELECT', db) redis.call('SET', 'k', 'pwned') end return 1",
        "for db = 0, 15 do redis.call('SELECT', db) redis.call('FLUSHDB') end return 1",
        "redis.call('FLUSHALL') return 1",
        "redis.call('SWAPDB', 0, 3) return 1",
        "redis.call('SET', 'x', 'y') redis.call('MOVE', 'x', 3) return 1",
        "redis.call('SET', 'x', 'y') redis.call('COPY', 'x', 'k', 'DB', 3, 'REPLACE') return 1",
      ]) {
        const response = await as(token, ['EVAL', script, '0']);
        expect([200, 400]).toContain(response.status);
        await neighbourIntact();
      }
      await result(hostile.standard, ['SET', 'k', 'mine']);
    });

    it.each(['standard', 'acl'] as const)('a script run with the %s token cannot MIGRATE keys to another server (neither the gateway’s user nor tenants’ users have MIGRATE)', async (role) => {
      const port = stack.server('rival', 'main').port;
      const migrate = `redis.call('SET', 'x', 'y') return redis.call('MIGRATE', '127.0.0.1', ${port}, 'x', 3, 1000, 'AUTH2', '${KV_TEST_ADMIN.username}', '${KV_TEST_ADMIN.password}')`;
      const response = await as(hostile[role], ['EVAL', migrate, '0']);
      expect(response.status).toBe(400);
      expect((response.body as { error: string }).error).toMatch(/can't run this command|no permissions to run the 'migrate' command/);
      await neighbourIntact();
    });

    it('a user given MIGRATE explicitly, also in a selector, still cannot run it', async () => {
      await result(hostile.standard, ['ACL', 'SETUSER', 'mover', 'on', '>pw', '~*', '+@all', '+migrate', '(+migrate ~*)']);
      const token = (await result(hostile.standard, ['ACL', 'RESTTOKEN', 'mover', 'pw'])) as string;
      const port = stack.server('rival', 'main').port;
      const response = await as(token, ['EVAL', `return redis.call('MIGRATE', '127.0.0.1', ${port}, 'k', 3, 1000, 'COPY')`, '0']);
      expect(response.status).toBe(400);
      expect((response.body as { error: string }).error).toMatch(/no permissions to run the 'migrate' command/);
      await neighbourIntact();
    });

    it('the same commands sent directly are refused or stay in the database', async () => {
      await result(hostile.standard, ['SET', 'x', 'y']);
      for (const command of [['MOVE', 'x', '3'], ['COPY', 'x', 'k', 'DB', '3'], ['SWAPDB', '0', '3'], ['SELECT', '3']]) {
        expect((await as(hostile.standard, command)).status).toBe(400);
      }
      const pipeline = await call(url('/pipeline'), { token: hostile.standard, body: [['SELECT', '3'], ['FLUSHDB'], ['FLUSHALL']] });
      expect(pipeline.status).toBe(200);
      await neighbourIntact();
      await result(hostile.standard, ['SET', 'k', 'mine']);
    });
  });

  describe('functions, the script cache and Pub/Sub are the database’s own', () => {
    it('FUNCTION LOAD REPLACE of the neighbour’s library name does not hijack its FCALL', async () => {
      const hijack = "#!lua name=shared_name\nredis.register_function('greet', function(keys, args) redis.call('SET', 'stolen', args[1]) return 'hijacked' end)";
      expect(await as(hostile.standard, ['FUNCTION', 'LOAD', 'REPLACE', hijack])).toMatchObject({ status: 200, body: { result: 'shared_name' } });
      expect(await as(neighbour, ['FCALL', 'greet', '0', 'password'])).toMatchObject({ body: { result: 'rival says password' } });
      expect(await stack.admin('acme', 'main').exists('stolen')).toBe(0);
    });

    it('FUNCTION DELETE and FUNCTION FLUSH leave the neighbour’s functions', async () => {
      await result(hostile.standard, ['FUNCTION', 'DELETE', 'shared_name']);
      await result(hostile.standard, ['FUNCTION', 'FLUSH']);
      await neighbourIntact();
    });

    it.each(ROLES)('FUNCTION DUMP and FUNCTION LIST WITHCODE show nothing of the neighbour (%s token)', async (role) => {
      const token = hostile[role];
      const list = await as(token, ['FUNCTION', 'LIST', 'WITHCODE']);
      expect(JSON.stringify(list.body)).not.toMatch(/rival says/);
      const dump = await call(url(), { token, body: ['FUNCTION', 'DUMP'], headers: { 'Upstash-Encoding': 'base64' } });
      const payload = (dump.body as { result: string | null }).result;
      expect(payload === null ? '' : Buffer.from(payload, 'base64').toString('latin1')).not.toMatch(/rival says/);
    });

    it('an ACL user’s channel rules name channels as the tenant does', async () => {
      await result(hostile.standard, ['ACL', 'SETUSER', 'chatter', 'on', '>pw', '~*', '+@all', 'resetchannels', '&news']);
      const token = (await result(hostile.standard, ['ACL', 'RESTTOKEN', 'chatter', 'pw'])) as string;
      expect(await as(token, ['PUBLISH', 'news', 'hi'])).toMatchObject({ status: 200, body: { result: 0 } });
      expect(await as(token, ['PUBLISH', 'sports', 'hi'])).toMatchObject({ status: 400 });
    });

    it('SCRIPT FLUSH leaves the neighbour’s script cache', async () => {
      const sha = (await result(neighbour, ['SCRIPT', 'LOAD', "return 'cached'"])) as string;
      await result(hostile.standard, ['SCRIPT', 'FLUSH']);
      expect(await as(neighbour, ['EVALSHA', sha, '0'])).toMatchObject({ status: 200, body: { result: 'cached' } });
    });

    it('EVAL + PUBLISH on the neighbour’s internal channel name never reaches its /subscribe stream', async () => {
      const stream = await fetch(url('/subscribe/news'), { method: 'POST', headers: { authorization: `Bearer ${neighbour}` } });
      const reader = stream.body!.getReader();
      expect(Buffer.from((await reader.read()).value!).toString()).toBe('data: subscribe,news,1\n\n');
      for (const channel of ['rival.main:news', 'news']) {
        expect(await as(hostile.standard, ['EVAL', `return redis.call('PUBLISH', '${channel}', 'injected')`, '0'])).toMatchObject({ body: { result: 0 } });
      }
      expect(await result(neighbour, ['PUBLISH', 'news', 'genuine'])).toBe(1);
      expect(Buffer.from((await reader.read()).value!).toString()).toBe('data: message,news,genuine\n\n');
      await reader.cancel();
    });

    it('a busy script does not block the neighbour', async () => {
      let busyDone = false;
      const busy = as(hostile.standard, ['EVAL', 'local i = 0 while i < 200000000 do i = i + 1 end return i', '0']).then((r) => {
        busyDone = true;
        return r;
      });
      await new Promise((resolve) => setTimeout(resolve, 300)); // let the script reach its server
      expect(await as(neighbour, ['GET', 'k'])).toMatchObject({ status: 200, body: { result: 'secret' } });
      expect(busyDone).toBe(false);
      await busy;
      // On a loaded machine the gateway may answer before the script ends; the next tests need the
      // server free again (Redis answers BUSY meanwhile).
      await eventually(() => stack.admin('acme', 'main').ping(), 60_000);
    }, 120_000);
  });

  describe('what the server reports', () => {
    it('INFO is never an ACL user’s, even one made with +@all: every tenant user is denied @dangerous (docs/kv.md, "KV: tokens")', async () => {
      const response = await as(hostile.acl, ['INFO', 'everything']);
      expect(response.status).toBe(400);
      expect((response.body as { error: string }).error).toMatch(/^NOPERM/);
    });

    it.each(['standard', 'readonly'] as const)('INFO shows nothing of the neighbour, nor where the process lives (%s token)', async (role) => {
      const token = hostile[role];
      const info = (await result(token, ['INFO', 'everything'])) as string;
      expect(info).toMatch(/^redis_version:/m);
      expect(info).not.toMatch(/cmdstat_pfadd|cmdstat_fcall[:|]/m); // only the neighbour ran these
      expect(info).not.toMatch(/^(run_id|process_id|executable|config_file|tcp_port|listener\d+|master_replid):/m);
      const keyspace = (await result(token, ['INFO', 'keyspace'])) as string;
      expect(keyspace.trim()).toBe((await stack.admin('acme', 'main').info('keyspace')).trim());
    });

    it.each(ROLES)('MEMORY STATS and the like are refused, PUBSUB NUMPAT counts only the database’s own (%s token)', async (role) => {
      const token = hostile[role];
      const stream = await fetch(url('/psubscribe/rival*'), { method: 'POST', headers: { authorization: `Bearer ${neighbour}` } });
      const reader = stream.body!.getReader();
      await reader.read();
      for (const command of [['MEMORY', 'STATS'], ['MEMORY', 'DOCTOR'], ['MEMORY', 'MALLOC-STATS'], ['MEMORY', 'PURGE'], ['CLIENT', 'LIST'], ['LASTSAVE']]) {
        expect((await as(token, command)).status).toBe(400);
      }
      expect(await result(token, ['PUBSUB', 'NUMPAT'])).toBe(0);
      await reader.cancel();
    });
  });

  describe('the read-only token', () => {
    it('lists no keys and publishes nothing, also through scripts and functions, and its scripts still read', async () => {
      const ro = hostile.readonly;
      for (const script of ["return redis.call('KEYS', '*')", "return redis.call('SCAN', '0')", "return redis.call('PUBLISH', 'c', 'm')"]) {
        const response = await as(ro, ['EVAL', script, '0']);
        expect(response.status).toBe(400);
        expect((response.body as { error: string }).error).toMatch(/no permissions to run the '(keys|scan|publish)' command/);
      }
      const lister = "#!lua name=lister\nredis.register_function{function_name='list_keys', callback=function() return redis.call('KEYS', '*') end, flags={'no-writes'}}";
      await result(hostile.standard, ['FUNCTION', 'LOAD', 'REPLACE', lister]);
      expect(await as(hostile.standard, ['FCALL_RO', 'list_keys', '0'])).toMatchObject({ status: 200 });
      expect(await as(ro, ['FCALL_RO', 'list_keys', '0'])).toMatchObject({ status: 400 });
      expect(await result(ro, ['EVAL', "return redis.call('GET', 'k')", '0'])).toBe('mine');
      // The search module's writes flagged readonly (a server without the module knows no such command: also 400).
      for (const script of ["return redis.call('FT.DICTADD', 'd', 'w')", "return redis.call('FT.CONFIG', 'SET', 'TIMEOUT', '1')"]) {
        expect(await as(ro, ['EVAL', script, '0'])).toMatchObject({ status: 400 });
      }
      const dict = await as(hostile.standard, ['FT.DICTDUMP', 'd']); // 400 without the module
      expect(dict.status === 400 || JSON.stringify((dict.body as { result: unknown }).result) === '[]').toBe(true);
      const [single, batch] = [await as(ro, ['GET', 'k']), await call(url('/multi-exec'), { token: ro, body: [['GET', 'k'], ['TTL', 'k']] })];
      expect(single).toMatchObject({ status: 200, body: { result: 'mine' } });
      expect(batch).toMatchObject({ status: 200, body: [{ result: 'mine' }, { result: -1 }] });
    });
  });

  describe('SCRIPT DEBUG', () => {
    it.each(ROLES)('is refused to the %s token in every mode, and the database works afterwards', async (role) => {
      const token = hostile[role];
      for (const mode of ['YES', 'SYNC', 'NO']) {
        const response = await as(token, ['SCRIPT', 'DEBUG', mode]);
        expect(response).toMatchObject({ status: 400, body: { error: "ERR Command is not available: 'script|debug' (the Lua debugger takes over the connection and can block the server)" } });
        const batch = await call(url('/pipeline'), { token, body: [['SCRIPT', 'DEBUG', mode], ['GET', 'k']] });
        expect(batch.body).toEqual([{ error: expect.stringMatching(/'script\|debug'/) }, { result: 'mine' }]);
      }
      expect(await result(hostile.standard, ['SET', 'after-debug', '1'])).toBe('OK');
      expect(await stack.admin('acme', 'main').get('after-debug')).toBe('1');
    });
  });

  describe('a Redis server backs at most one KV database', () => {
    it('a second database on a bound server gets 503 naming the cause, on every replica, and the first keeps working', async () => {
      const squatter = stack.tokens('squatter', 'main');
      const other = await stack.replica();
      for (const base of [stack.url, other]) {
        for (const token of [squatter.standard, squatter.readonly]) {
          const response = await call(`${base}/get/k`, { token });
          expect(response).toEqual({
            status: 503,
            body: { error: 'ERR this database is misconfigured: its Redis server already backs another KV database' },
            headers: expect.anything(),
          });
        }
      }
      expect(JSON.stringify((await call(`${other}/flushall`, { token: squatter.standard })).body)).not.toMatch(/rival/);
      await neighbourIntact();
      expect(await victim.dbsize()).toBe(2);
    });

    it('the applier refuses a KV database on a server another tenant’s database already uses', async () => {
      const registry = new Redis(stack.control.url);
      const port = stack.server('rival', 'main').port;
      const doc = tenantDocumentSchema.parse({
        apiVersion: 'restash.dev/v1alpha1',
        kind: 'Tenant',
        metadata: { name: 'late' },
        spec: { kv: { databases: [{ name: 'main', redis: { url: `redis://${KV_TEST_ADMIN.username}:other@127.0.0.1:${port}/9` } }] } },
      });
      const tokens = { kv: { main: { standard: generateToken(), readonly: generateToken() } }, vector: {}, stream: {}, queue: {} };
      await expect(new RegistryWriter(registry, stack.seal).applyTenant(doc, tokens)).rejects.toThrow(
        `tenant 'late': KV database 'main' is on Redis server 127.0.0.1:${port}, which already backs KV database 'rival.main'`,
      );
      expect(await registry.exists('restash:v1:tenant:late')).toBe(0);
      registry.disconnect();
    });
  });

  describe('tenant deletion', () => {
    it('closes every connection of a deleted database on every replica', async () => {
      const leaving = stack.tokens('leaving', 'main').standard;
      const other = await stack.replica();
      const server = stack.admin('leaving', 'main');
      const streams = [];
      for (const base of [stack.url, other]) {
        expect((await call(`${base}/multi-exec`, { token: leaving, body: [['SET', 'a', '1']] })).status).toBe(200);
        expect((await call(`${base}/get/a`, { token: leaving })).body).toEqual({ result: '1' });
        const stream = await fetch(`${base}/subscribe/bye`, { method: 'POST', headers: { authorization: `Bearer ${leaving}` } });
        const reader = stream.body!.getReader();
        await reader.read();
        streams.push(reader);
      }
      const clients = async () => String(await server.client('LIST')).trim().split('\n').length;
      expect(await clients()).toBeGreaterThan(1);

      const registry = new Redis(stack.control.url);
      await new RegistryWriter(registry, stack.seal).deleteTenant('leaving');
      registry.disconnect();

      // Only this check's own connection is left on the server, and the streams ended.
      await eventually(async () => expect(await clients()).toBe(1), 10_000);
      for (const reader of streams) {
        let done = false;
        while (!done) ({ done } = await reader.read());
      }
      const metrics = (await call(`${stack.managementUrl}/metrics`)).body as string;
      expect(metrics).not.toMatch(/database="leaving\.main"/);
      expect(metrics).toMatch(/restash_kv_connections\{database="acme\.main"/);
      expect((await call(`${other}/get/a`, { token: leaving })).status).toBe(401);
    });
  });
});
