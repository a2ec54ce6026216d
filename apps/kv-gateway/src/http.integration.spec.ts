import { connect } from 'node:net';
import { Redis } from 'ioredis';
import { claimPlatformServer, platformOwner, registryKeys } from '@restash/shared/data-access-registry';
import { serverRunId } from '@restash/shared/data-access-redis';
import { call, eventually } from '@restash/shared/util-testing';
import { type KvStack, startKvStack } from './testing/kv-stack';

/**
 * Every rule of the KV API (docs/kv.md, "What the KV API does") that the SDK cannot express, over raw
 * HTTP, against real Redis. Effects are checked on Redis directly (as the gateway's admin user), not
 * only through the gateway.
 */
describe('kv-gateway over raw HTTP', () => {
  let stack: KvStack;
  let token: string;
  let readonly: string;
  const url = (path = '') => `${stack.url}${path}`;

  beforeAll(async () => {
    stack = await startKvStack({
      acme: [
        { name: 'main', db: 0 },
        { name: 'small', db: 1, maxRequestBytes: 1024, dailyRequests: 20 },
        { name: 'shared', db: 4, dailyRequests: 10 },
      ],
      rival: [{ name: 'main', db: 2 }],
      careless: [{ name: 'main', db: 3, onControlRedis: true }],
      squatter: [{ name: 'main', db: 5 }],
    });
    ({ standard: token, readonly } = stack.tokens('acme', 'main'));
  });
  afterAll(() => stack.stop());

  describe('command forms', () => {
    it('command in the path, with GET, HEAD, POST and PUT, and the token as _token', async () => {
      expect(await call(url(`/set/path%2Fkey/v%C3%A9?_token=${token}`))).toMatchObject({ status: 200, body: { result: 'OK' } });
      expect((await call(url('/get/path%2Fkey'), { token })).body).toEqual({ result: 'vé' });
      expect((await call(url('/get/path%2Fkey'), { token, method: 'HEAD' })).status).toBe(200);
      expect((await call(url('/strlen/path%2Fkey'), { token, method: 'PUT' })).body).toEqual({ result: 3 });
    });

    it('a POST body is the last argument and query parameters follow it', async () => {
      const value = 'a value with / and ? and spaces';
      expect((await call(url('/set/posted?EX=100'), { token, raw: value })).body).toEqual({ result: 'OK' });
      expect(await stack.admin('acme', 'main').get('posted')).toBe(value);
      expect(await stack.admin('acme', 'main').ttl('posted')).toBeGreaterThan(90);
    });

    it('binary POST bodies are stored byte for byte and read back in base64', async () => {
      const bytes = Buffer.from([0x00, 0xff, 0xfe, 0x80, 0x41]);
      await call(url('/set/binary'), { token, raw: bytes });
      expect(Buffer.compare((await stack.admin('acme', 'main').getBuffer('binary')) as Buffer, bytes)).toBe(0);
      const encoded = await call(url('/get/binary'), { token, headers: { 'Upstash-Encoding': 'base64' } });
      expect(Buffer.from((encoded.body as { result: string }).result, 'base64')).toEqual(bytes);
      const spec = await call(url('/get/binary'), { token, headers: { 'Service-Encoding': 'base64' } });
      expect(spec.body).toEqual(encoded.body);
      expect((await call(url('/get/binary'), { token })).body).toEqual({ result: '\u0000\uFFFD\uFFFD\uFFFDA' });
    });

    it('base64 spares only the top-level OK', async () => {
      const headers = { 'Upstash-Encoding': 'base64' };
      expect((await call(url(), { token, headers, body: ['SET', 'k', 'v'] })).body).toEqual({ result: 'OK' });
      expect((await call(url(), { token, headers, body: ['PING'] })).body).toEqual({ result: Buffer.from('PONG').toString('base64') });
      expect((await call(url(), { token, headers, body: ['INCR', 'counter'] })).body).toEqual({ result: 1 });
      expect((await call(url(), { token, headers, body: ['GET', 'nothing'] })).body).toEqual({ result: null });
    });

    it('JSON numbers and booleans are arguments', async () => {
      await call(url(), { token, body: ['SET', 'num', 99.5] });
      await call(url(), { token, body: ['SET', 'bool', true] });
      expect(await stack.admin('acme', 'main').mget('num', 'bool')).toEqual(['99.5', 'true']);
    });
  });

  describe('errors', () => {
    it('401 without a token or with a wrong one', async () => {
      const missing = await call(url('/get/k'));
      expect(missing.status).toBe(401);
      expect(missing.body).toHaveProperty('error');
      expect((await call(url('/get/k'), { token: 'wrong' })).status).toBe(401);
      expect((await call(url('/get/k?_token=wrong'))).status).toBe(401);
    });

    it('405 for any other method', async () => {
      for (const method of ['DELETE', 'PATCH', 'OPTIONS']) {
        const response = await call(url('/get/k'), { token, method });
        expect(response.status).toBe(405);
        expect(response.body).toHaveProperty('error');
      }
    });

    it('400 with the native text for wrong arity, wrong types and unknown commands', async () => {
      expect(await call(url(), { token, body: ['GET'] })).toMatchObject({ status: 400, body: { error: "ERR wrong number of arguments for 'get' command" } });
      await call(url(), { token, body: ['SET', 'str', 'text'] });
      expect(await call(url(), { token, body: ['INCR', 'str'] })).toMatchObject({ status: 400, body: { error: 'ERR value is not an integer or out of range' } });
      expect((await call(url(), { token, body: ['NOSUCHCOMMAND', 'x'] })).body).toEqual({
        error: "ERR unknown command 'NOSUCHCOMMAND', with args beginning with: 'x' ",
      });
    });

    it('400 for malformed JSON and for bodies that are not commands, with nothing executed', async () => {
      for (const raw of ['["SET","k"', '{"cmd":"SET"}', '[]', '[["SET","a"],"GET"]', '["SET", {"a":1}, "v"]', '']) {
        const response = await call(url(), { token, raw, method: 'POST' });
        expect(response.status).toBe(400);
        expect(Object.keys(response.body as object)).toEqual(['error']);
      }
      for (const path of ['/pipeline', '/multi-exec']) {
        expect((await call(url(path), { token, raw: '[["SET","half","1"],["SET"' })).status).toBe(400);
      }
      expect(await stack.admin('acme', 'main').exists('half')).toBe(0);
    });
  });

  describe('coverage table', () => {
    it.each([
      ['BLPOP', 'q', '0'],
      ['BRPOP', 'q', '0'],
      ['BRPOPLPUSH', 'a', 'b', '0'],
      ['BZPOPMIN', 'z', '0'],
      ['BZPOPMAX', 'z', '0'],
      ['XREAD', 'BLOCK', '0', 'STREAMS', 's', '$'],
      ['WATCH', 'k'],
      ['UNWATCH'],
      ['DISCARD'],
      ['MULTI'],
      ['SUBSCRIBE', 'c'],
      ['PSUBSCRIBE', 'c*'],
      ['CLIENT', 'LIST'],
      ['SELECT', '1'],
      ['AUTH', 'x'],
      ['HELLO', '3'],
      ['CLUSTER', 'INFO'],
      ['READONLY'],
      ['SWAPDB', '0', '1'],
      ['MOVE', 'k', '1'],
      ['SHUTDOWN'],
      ['DEBUG', 'SLEEP', '0'],
      ['CONFIG', 'SET', 'maxmemory', '1'],
      ['CONFIG', 'GET', '*'],
      ['MONITOR'],
      ['REPLICAOF', 'NO', 'ONE'],
      ['SLAVEOF', 'NO', 'ONE'],
      ['MODULE', 'LIST'],
      ['BGSAVE'],
      ['ACL', 'LOG'],
    ])('refuses %s with a clear 400', async (...command) => {
      const response = await call(url(), { token, body: command });
      expect(response.status).toBe(400);
      expect((response.body as { error: string }).error).toMatch(/^ERR Command is not available: '[a-z|]+' \(.+\)$/);
    });

    it('serves PUBLISH, PUBSUB, PING, ECHO, INFO', async () => {
      expect((await call(url(), { token, body: ['PUBLISH', 'c', 'm'] })).body).toEqual({ result: 0 });
      expect((await call(url(), { token, body: ['PUBSUB', 'CHANNELS'] })).body).toEqual({ result: [] });
      expect((await call(url(), { token, body: ['ECHO', 'e'] })).body).toEqual({ result: 'e' });
      expect((await call(url('/info'), { token })).body).toMatchObject({ result: expect.stringContaining('redis_version') });
    });

    it('FLUSHALL empties only this database', async () => {
      const rival = stack.tokens('rival', 'main').standard;
      await call(url(), { token: rival, body: ['SET', 'survivor', '1'] });
      await call(url(), { token, body: ['SET', 'doomed', '1'] });
      expect((await call(url(), { token, body: ['FLUSHALL'] })).body).toEqual({ result: 'OK' });
      expect(await stack.admin('acme', 'main').dbsize()).toBe(0);
      expect(await stack.admin('rival', 'main').get('survivor')).toBe('1');
    });
  });

  describe('read-only token', () => {
    it('reads, and is refused every write, SCAN, KEYS and writing scripts', async () => {
      await call(url(), { token, body: ['SET', 'shared', 'v'] });
      expect((await call(url(), { token: readonly, body: ['GET', 'shared'] })).body).toEqual({ result: 'v' });
      for (const command of [['SET', 'shared', 'x'], ['DEL', 'shared'], ['SCAN', '0'], ['KEYS', '*'], ['PUBLISH', 'c', 'm'], ['FLUSHALL']]) {
        const response = await call(url(), { token: readonly, body: command });
        expect(response.status).toBe(400);
        expect((response.body as { error: string }).error).toMatch(/^NOPERM/);
      }
      const script = await call(url(), { token: readonly, body: ['EVAL', "return redis.call('SET', KEYS[1], 'x')", '1', 'shared'] });
      expect(script.status).toBe(400);
      expect(await stack.admin('acme', 'main').get('shared')).toBe('v');
      const batch = await call(url('/pipeline'), { token: readonly, body: [['GET', 'shared'], ['SET', 'shared', 'y']] });
      expect(batch.body).toEqual([{ result: 'v' }, { error: "NOPERM this user has no permissions to run the 'set' command" }]);
    });
  });

  describe('pipeline and transaction', () => {
    it('runs a 1000-command pipeline in order', async () => {
      const commands = Array.from({ length: 1000 }, (_, i) => ['RPUSH', 'ordered', String(i)]);
      const response = await call(url('/pipeline'), { token, body: commands });
      expect(response.status).toBe(200);
      expect((response.body as unknown[]).map((item) => (item as { result: number }).result)).toEqual(Array.from({ length: 1000 }, (_, i) => i + 1));
      expect(await stack.admin('acme', 'main').lrange('ordered', 995, -1)).toEqual(['995', '996', '997', '998', '999']);
    });

    it('a pipeline continues past failing and refused commands', async () => {
      const response = await call(url('/pipeline'), { token, body: [['SET', 'pa', 'x'], ['INCR', 'pa'], ['BLPOP', 'q', '0'], ['GET', 'pa']] });
      expect(response.body).toEqual([
        { result: 'OK' },
        { error: 'ERR value is not an integer or out of range' },
        { error: expect.stringMatching(/^ERR Command is not available: 'blpop'/) },
        { result: 'x' },
      ]);
    });

    it('a transaction with a runtime error runs every command and reports the error in place', async () => {
      const response = await call(url('/multi-exec'), { token, body: [['SET', 'ta', 'text'], ['INCR', 'ta'], ['SET', 'tb', '1']] });
      expect(response.status).toBe(200);
      expect(response.body).toEqual([{ result: 'OK' }, { error: 'ERR value is not an integer or out of range' }, { result: 'OK' }]);
      expect(await stack.admin('acme', 'main').get('tb')).toBe('1');
    });

    it.each([
      ['a syntax error', [['SET', 'td', '1'], ['SET', 'td']]],
      ['an unsupported command', [['SET', 'td', '1'], ['BLPOP', 'q', '0']]],
      ['an unknown command', [['SET', 'td', '1'], ['NOPE']]],
    ])('a transaction with %s is discarded: one error, nothing executed', async (_why, commands) => {
      const response = await call(url('/multi-exec'), { token, body: commands });
      expect(response.status).toBe(400);
      expect(Object.keys(response.body as object)).toEqual(['error']);
      expect(await stack.admin('acme', 'main').exists('td')).toBe(0);
    });
  });

  describe('limits', () => {
    const small = () => stack.tokens('acme', 'small').standard;

    it('rejects an oversized body whole, in every form, and writes nothing', async () => {
      const big = 'x'.repeat(2000);
      for (const [path, body] of [['/', ['SET', 'big', big]], ['/pipeline', [['SET', 'big', big]]], ['/multi-exec', [['SET', 'ok', '1'], ['SET', 'big', big]]]] as const) {
        const response = await call(url(path), { token: small(), body });
        expect(response.status).toBe(400);
        expect((response.body as { error: string }).error).toMatch(/^ERR max request size exceeded/);
      }
      expect((await call(url('/set/big'), { token: small(), raw: big })).status).toBe(400);
      expect(await stack.admin('acme', 'small').exists('big', 'ok')).toBe(0);
    });

    it('counts a command in the path once, as what it carries: what passes as JSON passes in the path', async () => {
      // 1024-byte limit: SET + a 1000-byte key + v is 1004 bytes of arguments (1014 as JSON text).
      const key = 'p'.repeat(1000);
      expect((await call(url(), { token: small(), body: ['SET', key, 'v'] })).body).toEqual({ result: 'OK' });
      expect((await call(url(`/set/${key}/w`), { token: small() })).body).toEqual({ result: 'OK' });
      expect(await stack.admin('acme', 'small').get(key)).toBe('w');
      const over = await call(url(`/set/${key}x/${'y'.repeat(21)}`), { token: small() });
      expect(over).toMatchObject({ status: 400, body: { error: 'ERR max request size exceeded. Limit: 1024 bytes, Actual: 1025 bytes' } });
      await stack.admin('acme', 'small').del(key);
    });

    it('counts commands against the daily limit and discards a transaction that would exceed it', async () => {
      // 20 per day: 15 now, then a 6-command transaction must be discarded whole.
      const fifteen = await call(url('/pipeline'), { token: small(), body: Array.from({ length: 15 }, (_, i) => ['SET', `q${i}`, '1']) });
      expect(fifteen.status).toBe(200);
      const tx = await call(url('/multi-exec'), { token: small(), body: Array.from({ length: 6 }, (_, i) => ['SET', `over${i}`, '1']) });
      expect(tx.status).toBe(400);
      expect((tx.body as { error: string }).error).toMatch(/^ERR max daily request limit exceeded/);
      expect(await stack.admin('acme', 'small').exists('over0')).toBe(0);
      expect((await call(url(), { token: small(), body: ['GET', 'q1'] })).body).toEqual({ result: '1' });
    });

    it('refuses a reply over the request limit (as Upstash does) without reading it, and keeps serving', async () => {
      // 1 MiB limit on acme/main: SETRANGE builds a 3 MB value with a request of a few bytes.
      expect((await call(url(), { token, body: ['SETRANGE', 'huge', 3_000_000, 'x'] })).body).toEqual({ result: 3_000_001 });
      expect((await call(url(), { token, body: ['SETRANGE', 'fits', 500_000, 'y'] })).body).toEqual({ result: 500_001 });
      const tooLarge = /^ERR max request size exceeded\. Limit: 1048576 bytes, Actual: a reply of more than 1048576 bytes/;
      for (const t of [token, readonly]) {
        const single = await call(url('/get/huge'), { token: t });
        expect(single.status).toBe(400);
        expect((single.body as { error: string }).error).toMatch(tooLarge);
      }
      // A pipeline: the item before is answered, the oversized one errs, those after it on its connection are lost.
      const pipeline = await call(url('/pipeline'), { token, body: [['STRLEN', 'fits'], ['GET', 'huge'], ['INCR', 'after-huge']] });
      expect(pipeline.status).toBe(200);
      expect(pipeline.body).toEqual([
        { result: 500_001 },
        { error: expect.stringMatching(tooLarge) },
        { error: expect.stringMatching(/^ERR reply lost: .* this command may have run$/) },
      ]);
      // A transaction runs; only its reply is refused.
      const tx = await call(url('/multi-exec'), { token, body: [['SET', 'tx-ran', '1'], ['GET', 'huge']] });
      expect(tx.status).toBe(200);
      expect(tx.body).toEqual([
        { error: expect.stringMatching(/the transaction ran; its reply was not read\)$/) },
        { error: expect.stringMatching(/the transaction ran; its reply was not read\)$/) },
      ]);
      expect(await stack.admin('acme', 'main').get('tx-ran')).toBe('1');
      // Replies under the limit, and everything afterwards, are served as before.
      const fits = await call(url('/get/fits'), { token });
      expect(fits.status).toBe(200);
      expect((fits.body as { result: string }).result).toHaveLength(500_001);
      expect((await call(url(), { token, body: ['STRLEN', 'huge'] })).body).toEqual({ result: 3_000_001 });
      await stack.admin('acme', 'main').del('huge', 'fits', 'tx-ran', 'after-huge');
    });

    it('counts the daily limit once across gateway replicas', async () => {
      const other = await stack.replica();
      const shared = stack.tokens('acme', 'shared').standard;
      const statuses: number[] = [];
      for (let i = 0; i < 14; i++) {
        statuses.push((await call(`${i % 2 ? other : stack.url}/incr/hits`, { token: shared })).status);
      }
      expect(statuses.filter((s) => s === 200)).toHaveLength(10);
      expect(await stack.admin('acme', 'shared').get('hits')).toBe('10');
    });
  });

  describe('ACL users', () => {
    it('ACL RESTTOKEN returns a token whose commands Redis checks as that user', async () => {
      const setuser = ['ACL', 'SETUSER', 'reader', 'on', '>secret', '~*', '&*', '+@read', '+acl|whoami'];
      expect((await call(url(), { token, body: setuser })).body).toEqual({ result: 'OK' });
      const minted = await call(url(), { token, body: ['ACL', 'RESTTOKEN', 'reader', 'secret'] });
      const aclToken = (minted.body as { result: string }).result;
      expect(aclToken).toMatch(/^[\w-]{43}$/);

      await call(url(), { token, body: ['SET', 'visible', 'yes'] });
      expect((await call(url(), { token: aclToken, body: ['GET', 'visible'] })).body).toEqual({ result: 'yes' });
      const denied = await call(url(), { token: aclToken, body: ['SET', 'visible', 'no'] });
      expect(denied.status).toBe(400);
      expect((denied.body as { error: string }).error).toMatch(/^NOPERM/);
      expect((await call(url(), { token: aclToken, body: ['ACL', 'WHOAMI'] })).body).toEqual({ result: 'reader' });

      // Changing the user's password revokes its tokens.
      await call(url(), { token, body: ['ACL', 'SETUSER', 'reader', 'resetpass', '>other'] });
      expect((await call(url(), { token: aclToken, body: ['GET', 'visible'] })).status).toBe(401);
    });

    it('answers a wrong password or a missing user with the spec’s text', async () => {
      expect((await call(url(), { token, body: ['ACL', 'RESTTOKEN', 'nobody', 'pw'] })).body).toEqual({
        error: 'ERR Wrong password or user nobody does not exist',
      });
    });

    it('keeps tenant users apart from the gateway’s and each other’s', async () => {
      await call(url(), { token, body: ['ACL', 'DELUSER', 'restash-gateway'] });
      await call(url(), { token, body: ['ACL', 'SETUSER', 'restash-gateway', 'off'] });
      expect(await stack.admin('acme', 'main').ping()).toBe('PONG'); // the gateway's own user is untouched
      const rival = stack.tokens('rival', 'main').standard;
      await call(url(), { token: rival, body: ['ACL', 'SETUSER', 'rivaluser', 'on'] });
      const users = (await call(url(), { token, body: ['ACL', 'USERS'] })).body as { result: string[] };
      expect(users.result).not.toContain('rivaluser');
      expect(users.result).not.toContain('default');
      expect(await stack.admin('acme', 'main').acl('USERS')).toEqual(expect.arrayContaining(['acme.main:reader', 'restash-gateway']));
      expect(await stack.admin('rival', 'main').acl('USERS')).toEqual(expect.arrayContaining(['rival.main:rivaluser', 'restash-gateway']));
    });
  });

  describe('tenant isolation', () => {
    it('a token never reaches another database’s keys or channels', async () => {
      const rival = stack.tokens('rival', 'main').standard;
      await call(url(), { token, body: ['SET', 'secret', 'acme'] });
      expect((await call(url(), { token: rival, body: ['GET', 'secret'] })).body).toEqual({ result: null });
      const stream = await fetch(url('/subscribe/alerts'), { method: 'POST', headers: { authorization: `Bearer ${rival}` } });
      const reader = stream.body!.getReader();
      await reader.read(); // the subscribe event
      expect((await call(url(), { token, body: ['PUBLISH', 'alerts', 'hello'] })).body).toEqual({ result: 0 });
      expect((await call(url(), { token: rival, body: ['PUBLISH', 'alerts', 'hello'] })).body).toEqual({ result: 1 });
      const { value } = await reader.read();
      expect(Buffer.from(value!).toString()).toBe('data: message,alerts,hello\n\n');
      await reader.cancel();
    });
  });

  describe('server-sent events', () => {
    it('PSUBSCRIBE streams pmessage events with the pattern and channel as the tenant named them', async () => {
      const stream = await fetch(url('/psubscribe/chat:*'), { method: 'POST', headers: { authorization: `Bearer ${token}` } });
      expect(stream.headers.get('content-type')).toBe('text/event-stream');
      const reader = stream.body!.getReader();
      const first = Buffer.from((await reader.read()).value!).toString();
      expect(first).toBe('data: psubscribe,chat:*,1\n\n');
      expect((await call(url(), { token, body: ['PUBLISH', 'chat:room1', '{"text":"hi"}'] })).body).toEqual({ result: 1 });
      expect(Buffer.from((await reader.read()).value!).toString()).toBe('data: pmessage,chat:*,chat:room1,{"text":"hi"}\n\n');
      await reader.cancel();
    });

    it('cuts a stream whose client leaves more than 32 MiB unread, and unsubscribes it', async () => {
      const { hostname, port } = new URL(stack.url);
      const socket = connect(Number(port), hostname);
      socket.on('error', () => undefined);
      socket.write(`POST /subscribe/slow HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${token}\r\nContent-Length: 0\r\n\r\n`);
      // The stream's first event has come; then the client reads no more.
      await new Promise((resolve) => socket.once('data', resolve));
      socket.pause();
      const numsub = async () => ((await call(url(), { token, body: ['PUBSUB', 'NUMSUB', 'slow'] })).body as { result: [string, number] }).result[1];
      expect(await numsub()).toBe(1);
      // 60 MB published: more than the limit plus what the loopback socket buffers take.
      const payload = 'p'.repeat(1_000_000);
      for (let i = 0; i < 60 && (await numsub()) === 1; i++) {
        expect((await call(url(), { token, body: ['PUBLISH', 'slow', payload] })).status).toBe(200);
      }
      await eventually(async () => expect(await numsub()).toBe(0), 10_000);
      socket.destroy();
    });

    it('HEAD of a subscribe stream answers the stream’s headers at once, without subscribing', async () => {
      for (const path of ['/subscribe/heads', '/psubscribe/heads*']) {
        const response = await fetch(url(path), { method: 'HEAD', headers: { authorization: `Bearer ${token}` } });
        expect(response.status).toBe(200);
        expect(response.headers.get('content-type')).toBe('text/event-stream');
        expect(await response.text()).toBe('');
      }
      expect((await call(url(), { token, body: ['PUBSUB', 'NUMSUB', 'heads'] })).body).toEqual({ result: ['heads', 0] });
      expect((await fetch(url('/subscribe/heads'), { method: 'HEAD', headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
      expect((await fetch(url('/subscribe/'), { method: 'HEAD', headers: { authorization: `Bearer ${token}` } })).status).toBe(400);
    });

    it('a subscribe stream needs a valid token and a channel', async () => {
      expect((await call(url('/subscribe/x'), { method: 'POST', token: 'wrong' })).status).toBe(401);
      expect((await call(url('/subscribe/'), { method: 'POST', token })).status).toBe(400);
      expect((await call(url('/subscribe/%E0%A4%A'), { method: 'POST', token })).status).toBe(400);
    });
  });

  describe('control Redis', () => {
    it('is never served as a tenant database', async () => {
      const response = await call(url(), { token: stack.tokens('careless', 'main').standard, body: ['FLUSHALL'] });
      expect(response.status).toBe(503);
      expect((response.body as { error: string }).error).toMatch(/control Redis/);
      const control = new Redis(stack.control.url);
      expect(await control.dbsize()).toBeGreaterThan(0); // the registry is still there
      control.disconnect();
    });

    it("nor is a server the platform claimed (the queue's Redis), even one it served before the claim", async () => {
      // As queue-gateway and queue-worker claim theirs: here the squatter's own server plays the queue's Redis, which
      // the squatter's database was served from before any queue service claimed it (a first install).
      const squatter = stack.tokens('squatter', 'main').standard;
      expect((await call(url(), { token: squatter, body: ['SET', 'mine', '1'] })).body).toEqual({ result: 'OK' });
      const control = new Redis(stack.control.url);
      const queueRedis = stack.admin('squatter', 'main');
      const stop = claimPlatformServer(control, queueRedis, 'queue', { log: () => undefined, warn: () => undefined, error: () => undefined });
      const runId = await serverRunId(queueRedis);
      await eventually(async () => expect(await control.get(registryKeys.kvServer(runId))).toBe(platformOwner('queue')));
      stop();
      await queueRedis.set('restash:queue:job', 'a message of another tenant');
      // The claim is announced: the gateway checks the server again at the next request.
      await eventually(async () => expect((await call(url(), { token: squatter, body: ['GET', 'mine'] })).status).toBe(503));
      for (const body of [['GET', 'restash:queue:job'], ['FLUSHALL']]) {
        const response = await call(url(), { token: squatter, body });
        expect(response.status).toBe(503);
        expect((response.body as { error: string }).error).toMatch(/a Redis server of the platform/);
      }
      expect(await queueRedis.get('restash:queue:job')).toBe('a message of another tenant');
      control.disconnect();
    });
  });

  describe('operations', () => {
    it('echoes a request id and changes the sync token after writes', async () => {
      const first = await call(url('/get/x'), { token, headers: { 'x-request-id': 'req-123' } });
      expect(first.headers.get('x-request-id')).toBe('req-123');
      const afterRead = await call(url('/get/x'), { token });
      expect(afterRead.headers.get('upstash-sync-token')).toBe(first.headers.get('upstash-sync-token'));
      const afterWrite = await call(url('/set/x/1'), { token });
      expect(afterWrite.headers.get('upstash-sync-token')).not.toBe(first.headers.get('upstash-sync-token'));
    });

    it('serves health, readiness and metrics on the management port', async () => {
      expect((await call(`${stack.managementUrl}/healthz`)).status).toBe(200);
      expect(await call(`${stack.managementUrl}/readyz`)).toMatchObject({ status: 200, body: { status: 'ready' } });
      const metrics = (await call(`${stack.managementUrl}/metrics`)).body as string;
      expect(metrics).toMatch(/restash_kv_request_duration_seconds_count\{tenant="acme",operation="get",status="200"\} \d+/);
      expect(metrics).toMatch(/restash_kv_commands_total\{tenant="acme",command="rpush"\} 1000/);
      expect(metrics).toMatch(/restash_kv_connections\{database="acme.main",role="shared",status="ready"\} 2/);
    });
  });
});
