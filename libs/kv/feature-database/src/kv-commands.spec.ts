import { Logger } from '@nestjs/common';
import { rejectionOf } from '@restash/shared/util-errors';
import { NotReplicatedError } from '@restash/kv/data-access-redis';
import { KvError, scriptDigest } from '@restash/kv/util-command';
import { AclUsers } from './acl-users';
import { KvBackendFailures } from './backend-failures';
import { KvCommands } from './kv-commands';
import { FakeBackend, FakeRegistry, FakeRuntimeRecords, RecordingObserver, databaseRecord, replyError, session } from './testing/fakes';

function setup() {
  const backend = new FakeBackend();
  const observer = new RecordingObserver();
  const records = new FakeRuntimeRecords();
  const failures = new KvBackendFailures(observer);
  const aclUsers = new AclUsers(new FakeRegistry(databaseRecord()), records, (_tenant, run) => run(), failures);
  const commands = new KvCommands(aclUsers, failures, observer, 1_000);
  return { backend, observer, records, commands, s: session(backend) };
}

const failure = (promise: Promise<unknown>): Promise<KvError> => rejectionOf(promise, KvError);

describe('KvCommands (over fakes of its ports)', () => {
  beforeAll(() => Logger.overrideLogger(false));

  it('runs a command on the database (its own server: keys as sent) and counts it', async () => {
    const { commands, backend, observer, s } = setup();
    expect((await commands.single(s, ['set', 'k', 'v'])).result).toBe('OK');
    expect(backend.sent).toEqual([['set', 'k', 'v']]);
    expect(String((await commands.single(s, ['get', 'k'])).result)).toBe('v');
    expect(observer.commands).toEqual(['acme:set', 'acme:get']);
  });

  it('gives each write its own sync token and a read the latest one (read-your-writes)', async () => {
    const { commands, s } = setup();
    const first = (await commands.single(s, ['set', 'a', '1'])).syncToken;
    const second = (await commands.single(s, ['set', 'b', '2'])).syncToken;
    const read = (await commands.single(s, ['get', 'a'])).syncToken;
    expect(second).not.toBe(first);
    expect(read).toBe(second);
    expect(commands.syncToken('acme.main', false)).toBe(second);
  });

  it("answers Redis's error reply as 400 and a lost connection as 503, counting only the latter", async () => {
    const { commands, backend, observer, s } = setup();
    backend.reply = () => {
      throw replyError('WRONGTYPE Operation against a key holding the wrong kind of value');
    };
    const refused = await failure(commands.single(s, ['get', 'k']));
    expect([refused.status, refused.message]).toEqual([400, 'WRONGTYPE Operation against a key holding the wrong kind of value']);
    backend.reply = undefined;
    backend.fail = new Error('connect ECONNREFUSED 127.0.0.1:6391');
    const down = await failure(commands.single(s, ['get', 'k']));
    expect([down.status, down.message]).toEqual([503, 'ERR the database is unavailable, retry later']);
    expect(observer.errors).toEqual(['acme:connection']);
  });

  it("answers a write no replica acknowledged with Redis's NOREPLICAS text and 503", async () => {
    const { commands, backend, observer, s } = setup();
    backend.fail = new NotReplicatedError({ replicas: 1, timeoutMs: 100 }, 0);
    const error = await failure(commands.single(s, ['set', 'k', 'v']));
    expect(error.status).toBe(503);
    expect(error.message).toMatch(/^NOREPLICAS /);
    expect(observer.errors).toEqual(['acme:replication']);
  });

  it('runs a pipeline in order with a refused command as its own error item', async () => {
    const { commands, backend, s } = setup();
    const { result } = await commands.pipeline(s, [['set', 'k', 'v'], ['nosuchcommand'], ['get', 'k']]);
    expect(result[0]).toEqual({ reply: 'OK' });
    expect(result[1]).toHaveProperty('error');
    expect(String((result[2] as { reply: Buffer }).reply)).toBe('v');
    expect(backend.sent).toEqual([['set', 'k', 'v'], ['get', 'k']]);
  });

  it('discards a transaction with a refused command as a whole: 400, nothing sent', async () => {
    const { commands, backend, s } = setup();
    expect((await failure(commands.transaction(s, [['set', 'k', 'v'], ['nosuchcommand']]))).status).toBe(400);
    expect(backend.sent).toEqual([]);
  });

  it("runs a script with Upstash's allow-key-locking flag without it, then EVALSHA of its Upstash digest by the digest Redis knows", async () => {
    const { commands, backend, s } = setup();
    const flagged = "#!lua flags=allow-key-locking\nreturn redis.call('INCR', KEYS[1])";
    const plain = "#!lua\nreturn redis.call('INCR', KEYS[1])";
    backend.reply = () => 1;
    await commands.single(s, ['evalsha', scriptDigest(flagged), '1', 'k']);
    await commands.single(s, ['eval', flagged, '1', 'k']);
    await commands.pipeline(s, [['evalsha', scriptDigest(flagged), '1', 'k']]);
    await commands.transaction(s, [['EVALSHA', scriptDigest(flagged).toUpperCase(), '1', 'k']]);
    expect(backend.sent).toEqual([
      // Before this process saw the script, the digest goes as sent (Redis answers NOSCRIPT, the library sends EVAL).
      ['evalsha', scriptDigest(flagged), '1', 'k'],
      ['eval', plain, '1', 'k'],
      ['evalsha', scriptDigest(plain), '1', 'k'],
      ['EVALSHA', scriptDigest(plain), '1', 'k'],
    ]);
  });

  it('refuses MONITOR to a read-only token (400)', async () => {
    const { commands, backend } = setup();
    const error = await failure(commands.monitor(session(backend, 'readonly'), { command: () => undefined, end: () => undefined } as never));
    expect(error.status).toBe(400);
  });

  it('records an ACL SETUSER in the registry and drops the connections of that user', async () => {
    const { commands, backend, records, s } = setup();
    backend.reply = (args) => {
      if (String(args[0]) === 'acl' && String(args[1]) === 'list') return [Buffer.from('user acme.main:alice on #abc ~acme.main:* +@read')];
      if (String(args[0]) === 'acl') return 'OK';
      return undefined;
    };
    await commands.single(s, ['acl', 'setuser', 'alice', 'on', '>secret', '~*', '+@read']);
    expect(backend.dropped).toEqual(['acme.main:alice']);
    expect(records.aclUsers).toEqual([['acme.main:alice', 'on #abc ~acme.main:* +@read']]);
    expect(records.announced).toHaveLength(1);
    expect(records.announced[0]).toContain('acme.main:alice');
  });
});
