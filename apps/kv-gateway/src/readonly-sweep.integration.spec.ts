import type { Redis } from 'ioredis';
import { call } from '@restash/shared/util-testing';
import { type KvStack, startKvStack } from './testing/kv-stack';

/**
 * Issue 11, KV: the read-only token is meant for clients where it is public (docs/kv.md,
 * "KV: tokens"), so a hostile holder sweeps the server's whole command table with it. Every
 * command and subcommand the server lists in `COMMAND` is sent, with arguments of the arity Redis
 * declares and with more, alone and again in one pipeline; nothing of the database or the server
 * may change (keys, values, expiries, other logical databases, functions, the script cache, ACL
 * users, configuration), no answer may be a 5xx, and the database serves afterwards.
 */
describe('kv-gateway: a read-only token sweeping the command table', () => {
  let stack: KvStack;
  let readonly: string;
  let standard: string;
  let admin: Redis;
  let scriptSha: string;
  const LIBRARY = "#!lua name=owned\nredis.register_function('owned_f', function(keys, args) return 1 end)";

  /** Everything a write of any kind could change, read on the database's own server as the gateway's user. */
  const fingerprint = async (): Promise<Record<string, unknown>> => {
    const keys = (await admin.keys('*')).sort();
    const values = await Promise.all(
      keys.map(async (key) => [key, (await admin.dumpBuffer(key))?.toString('hex'), (await admin.pttl(key)) > 0] as const),
    );
    // avg_ttl is a statistic Redis recomputes as time passes, not state.
    const keyspace = (await admin.info('keyspace')).split('\r\n').filter((line) => line.startsWith('db')).map((line) => line.replace(/,avg_ttl=\d+/, ''));
    const [functions, scripts, users, config] = await Promise.all([
      admin.callBuffer('FUNCTION', 'DUMP') as Promise<Buffer>,
      admin.call('SCRIPT', 'EXISTS', scriptSha),
      admin.call('ACL', 'LIST'),
      admin.call('CONFIG', 'GET', '*'),
    ]);
    return { values, keyspace, functions: functions.toString('hex'), scripts, users, config };
  };

  /** `name` (or `name sub`) with `count` arguments: existing key names first, then numbers. */
  const commandLine = (words: string[], count: number): string[] => {
    const filler = ['k', 'h', '1', 'z', 'l', '0', 's', 'x'];
    return [...words, ...Array.from({ length: count }, (_, i) => filler[i % filler.length] as string)];
  };

  /**
   * Every command line to try: each command and subcommand at its declared arity, and with two more arguments; and
   * on a set, a sorted set and a hash, with counts at the int64 edges after the key (issue 30: `SRANDMEMBER s
   * -9223372036854775807` made the server allocate until the kernel killed it).
   */
  const sweep = async (): Promise<string[][]> => {
    const table = (await admin.call('COMMAND')) as unknown[][];
    const lines: string[][] = [];
    for (const entry of table) {
      const specs = [entry, ...(((entry[9] as unknown[][] | undefined) ?? []) as unknown[][])];
      for (const spec of specs) {
        const words = String(spec[0]).split('|');
        const arity = Number(spec[1]);
        const least = Math.max(Math.abs(arity) - words.length, 0);
        lines.push(commandLine(words, least), commandLine(words, least + 2));
        for (const key of ['s', 'z', 'h']) for (const edge of ['-9223372036854775807', '9223372036854775807']) lines.push([...words, key, edge], [...words, key, edge, edge]);
      }
    }
    return lines;
  };

  beforeAll(async () => {
    stack = await startKvStack({ acme: [{ name: 'main' }] });
    ({ readonly, standard } = stack.tokens('acme', 'main'));
    admin = stack.admin('acme', 'main');
    await admin.set('k', 'value');
    await admin.hset('h', 'f', 'v');
    await admin.zadd('z', 1, 'm');
    await admin.rpush('l', 'a', 'b');
    await admin.sadd('s', 'm');
    await admin.set('x', '5', 'EX', 3600);
    await admin.select(1);
    await admin.set('other-db', '1');
    await admin.select(0);
    await admin.call('FUNCTION', 'LOAD', LIBRARY);
    scriptSha = (await admin.call('SCRIPT', 'LOAD', 'return 1')) as string;
    await admin.call('ACL', 'SETUSER', 'acme.main:reader', 'on', '>pw', '~*', '+@read');
    // The gateway's Redis user of read-only tokens (KvBackend.asReadonly) is made on their first command.
    expect(await call(stack.url, { token: readonly, body: ['GET', 'k'] })).toMatchObject({ status: 200, body: { result: 'value' } });
  });
  afterAll(() => stack.stop());

  it('changes nothing of the database or the server, one command at a time and in one pipeline, and never answers 5xx', async () => {
    const before = await fingerprint();
    const lines = await sweep();
    expect(lines.length).toBeGreaterThan(2000); // Redis 7 lists 240 commands and their subcommands, 14 lines each
    const answers: string[] = [];
    for (const line of lines) {
      const response = await call(stack.url, { token: readonly, body: line });
      if (response.status >= 500 || !('result' in (response.body as object) || 'error' in (response.body as object))) {
        answers.push(`${line.join(' ')} → ${response.status} ${JSON.stringify(response.body)}`);
      }
    }
    expect(answers).toEqual([]);
    expect(await fingerprint()).toEqual(before);

    const pipeline = await call(`${stack.url}/pipeline`, { token: readonly, body: lines });
    expect(pipeline.status).toBe(200);
    expect(pipeline.body).toHaveLength(lines.length);
    expect(await fingerprint()).toEqual(before);
  });

  it('refuses every command Redis flags write, with NOPERM', async () => {
    const table = (await admin.call('COMMAND')) as unknown[][];
    const writes = table.filter((entry) => (entry[2] as string[]).includes('write')).map((entry) => String(entry[0]));
    expect(writes.length).toBeGreaterThan(50);
    for (const name of writes) {
      const response = await call(stack.url, { token: readonly, body: commandLine([name], 3) });
      expect(`${name}: ${response.status}`).toBe(`${name}: 400`);
      expect((response.body as { error: string }).error).toMatch(/NOPERM|not available|unknown/);
    }
  });

  it('serves the database afterwards, to both tokens', async () => {
    expect(await call(stack.url, { token: standard, body: ['SET', 'after', 'ok'] })).toMatchObject({ status: 200, body: { result: 'OK' } });
    expect(await call(stack.url, { token: readonly, body: ['GET', 'after'] })).toMatchObject({ status: 200, body: { result: 'ok' } });
  });
});
