import { CommandTable } from './command-table';
import { KvError } from './kv-error';
import { type PolicyContext, prepareCommand, rewriteReply, upstashArguments } from './policy';
import type { CommandArgs } from './request';

/** A COMMAND entry in the shape Redis 7 sends: name, arity, flags, keys, categories, tips, key specs, subcommands. */
const entry = (name: string, arity: number, flags: string[], subcommands: unknown[] = [], categories: string[] = []) => [
  name, arity, flags, 0, 0, 0, categories, [], [], subcommands,
];

const table = CommandTable.fromCommandReply([
  entry('get', 2, ['readonly', 'fast']),
  entry('set', -3, ['write', 'denyoom']),
  entry('scan', -2, ['readonly']),
  entry('srandmember', -2, ['readonly']),
  entry('eval', -3, ['noscript', 'stale']),
  entry('publish', 3, ['pubsub', 'fast']),
  entry('flushall', -1, ['write']),
  entry('blpop', -3, ['write', 'blocking']),
  entry('xread', -4, ['readonly', 'blocking']),
  entry('select', 2, ['loading', 'fast']),
  entry('copy', -3, ['write']),
  entry('shutdown', -1, ['admin', 'noscript']),
  entry('info', -1, ['loading', 'stale']),
  entry('config', -2, [], [entry('config|get', -3, ['admin', 'noscript']), entry('config|set', -4, ['admin', 'noscript'])]),
  entry('acl', -2, [], [
    entry('acl|setuser', -3, ['admin', 'noscript']),
    entry('acl|deluser', -3, ['admin', 'noscript']),
    entry('acl|list', 2, ['admin', 'noscript']),
    entry('acl|whoami', 2, ['noscript']),
    entry('acl|dryrun', -4, ['admin', 'noscript']),
    entry('acl|log', -2, ['admin', 'noscript']),
  ]),
  entry('pubsub', -2, [], [entry('pubsub|channels', -2, ['pubsub']), entry('pubsub|numsub', -2, ['pubsub'])]),
  entry('lastsave', 1, ['loading', 'stale', 'fast'], [], ['@admin', '@fast', '@dangerous']),
  entry('script', -2, [], [
    entry('script|debug', 3, ['noscript']),
    entry('script|flush', -2, ['noscript']),
    entry('script|exists', -3, ['noscript']),
  ]),
  entry('function', -2, [], [entry('function|list', -2, ['noscript']), entry('function|load', -3, ['write', 'noscript'])]),
  entry('memory', -2, [], [entry('memory|stats', 2, []), entry('memory|usage', -3, ['readonly']), entry('memory|purge', 2, [])]),
  entry('fcall_ro', -3, ['readonly', 'noscript']),
  entry('FT.ALIASADD', -1, ['readonly', 'module']),
  entry('FT.SEARCH', -1, ['readonly', 'module']),
  entry('FT.CURSOR', -1, ['readonly', 'module']),
  entry('FT.CONFIG', -1, ['readonly', 'module']),
  entry('FT.DEBUG', -2, ['readonly', 'module']),
  entry('FT._LIST', -1, ['readonly', 'module']),
  entry('json.get', -1, ['readonly', 'module']),
]);

const standard: PolicyContext = { role: 'standard', prefix: 'd1:', maxReplyBytes: 1024 };
const readonly: PolicyContext = { role: 'readonly', prefix: 'd1:', maxReplyBytes: 1024 };
const prepare = (args: CommandArgs, ctx = standard) => prepareCommand(args, table, ctx);
const argsOf = (args: CommandArgs, ctx = standard) => {
  const prepared = prepare(args, ctx);
  if (prepared.kind !== 'redis') throw new Error(`${prepared.label} is not run by Redis`);
  return prepared.args;
};

function refusal(args: CommandArgs, ctx = standard): string {
  try {
    prepare(args, ctx);
  } catch (e) {
    expect(e).toBeInstanceOf(KvError);
    expect((e as KvError).status).toBe(400);
    return e instanceof Error ? e.message : String(e);
  }
  throw new Error(`${args.join(' ')} was accepted`);
}

describe('prepareCommand', () => {
  it('passes supported commands through, case-insensitively, and labels them', () => {
    expect(prepare(['GET', 'k'])).toEqual({ kind: 'redis', args: ['GET', 'k'], label: 'get', write: false });
    expect(prepare(['set', 'k', 'v'])).toMatchObject({ label: 'set', write: true });
    expect(prepare(['XREAD', 'COUNT', '1', 'STREAMS', 'block', '0'])).toMatchObject({ label: 'xread' });
  });

  it('answers an unknown command in Redis’s own words', () => {
    expect(refusal(['nosuch', 'a'])).toBe("ERR unknown command 'nosuch', with args beginning with: 'a' ");
  });

  it('refuses what the coverage table excludes and what leaves the database', () => {
    expect(refusal(['BLPOP', 'q', '0'])).toMatch(/^ERR Command is not available: 'blpop'/);
    expect(refusal(['xread', 'BLOCK', '0', 'STREAMS', 's', '$'])).toMatch(/blocking/);
    expect(refusal(['select', '1'])).toMatch(/'select'/);
    expect(refusal(['copy', 'a', 'b', 'DB', '3'])).toMatch(/outside this database/);
  });

  it('refuses server administration, by Redis’s own admin flag', () => {
    expect(refusal(['shutdown'])).toMatch(/server administration/);
    expect(refusal(['CONFIG', 'SET', 'maxmemory', '1'])).toMatch(/'config\|set'/);
    expect(refusal(['acl', 'log'])).toMatch(/'acl\|log'/);
  });

  it('refuses what Redis only categorises @admin (no admin flag)', () => {
    expect(refusal(['LASTSAVE'])).toMatch(/'lastsave' \(server administration/);
  });

  it('refuses SCRIPT DEBUG to every token, and what reports or acts on the server process', () => {
    for (const ctx of [standard, readonly, { role: 'acl', prefix: 'd1:', maxReplyBytes: 1024 } as PolicyContext]) {
      for (const mode of ['YES', 'SYNC', 'NO']) expect(refusal(['SCRIPT', 'DEBUG', mode], ctx)).toMatch(/^ERR Command is not available: 'script\|debug'/);
      expect(refusal(['MEMORY', 'STATS'], ctx)).toMatch(/'memory\|stats' \(it acts on or reports the server process/);
      expect(refusal(['memory', 'purge'], ctx)).toMatch(/'memory\|purge'/);
    }
    expect(prepare(['MEMORY', 'USAGE', 'k'], readonly)).toMatchObject({ label: 'memory|usage' });
  });

  it('leaves the script cache and functions to the tenant (its server backs only its database); read-only tokens only read them', () => {
    expect(prepare(['SCRIPT', 'FLUSH'])).toMatchObject({ label: 'script|flush' });
    expect(prepare(['FUNCTION', 'LOAD', 'code'])).toMatchObject({ label: 'function|load' });
    expect(prepare(['SCRIPT', 'EXISTS', 'abc'], readonly)).toMatchObject({ label: 'script|exists' });
    expect(prepare(['FUNCTION', 'LIST'], readonly)).toMatchObject({ label: 'function|list' });
    expect(refusal(['SCRIPT', 'FLUSH'], readonly)).toMatch(/^NOPERM/);
    expect(refusal(['FUNCTION', 'LOAD', 'code'], readonly)).toMatch(/^NOPERM/);
  });

  it('refuses a tenant ACL user without a password, however nopass is written', () => {
    for (const rule of ['nopass', 'NOPASS', 'NoPass']) {
      expect(refusal(['ACL', 'SETUSER', 'default', 'on', rule, '~*', '+@all'])).toMatch(/^ERR Error in ACL SETUSER modifier 'nopass': not allowed/);
    }
    // A password rule that merely holds the word is a password.
    expect(argsOf(['acl', 'setuser', 'alice', '>nopass'])).toEqual(['acl', 'setuser', 'd1:alice', '>nopass', '-@admin', '-@dangerous', '+wait']);
  });

  it('refuses counts that make a reply pass the database limit, in every role and in transactions', () => {
    for (const ctx of [standard, readonly, { ...standard, transaction: true }]) {
      expect(refusal(['SRANDMEMBER', 's', '-9223372036854775807'], ctx)).toMatch(/^ERR max request size exceeded\. Limit: 1024 bytes/);
    }
  });

  it('turns FLUSHALL into FLUSHDB', () => {
    expect(argsOf(['FLUSHALL', 'ASYNC'])).toEqual(['flushdb', 'ASYNC']);
  });

  it('scopes ACL users and channels with the database prefix, and never gives them administration or dangerous commands', () => {
    expect(argsOf(['acl', 'setuser', 'alice', 'on'])).toEqual(['acl', 'setuser', 'd1:alice', 'on', '-@admin', '-@dangerous', '+wait']);
    expect(argsOf(['acl', 'setuser', 'alice', 'on', '+@all', '&ok', 'allchannels', 'AllChannels', 'resetchannels', '~&key'])).toEqual([
      'acl', 'setuser', 'd1:alice', 'on', '+@all', '&d1:ok', '&d1:*', '&d1:*', 'resetchannels', '~&key', '-@admin', '-@dangerous', '+wait',
    ]);
    // Passwords and hashes pass as given, whatever they hold; so does a root rule ending with ')'.
    expect(argsOf(['acl', 'setuser', 'alice', '>pa &ss)', '<x)', '#abc', '~key)'])).toEqual(['acl', 'setuser', 'd1:alice', '>pa &ss)', '<x)', '#abc', '~key)', '-@admin', '-@dangerous', '+wait']);
    // Selectors grant rights of their own: their channels are scoped and the same categories are denied in them too.
    expect(argsOf(['acl', 'setuser', 'alice', '(+publish ~* "&news" \'allchannels\')'])).toEqual(['acl', 'setuser', 'd1:alice', '(+publish ~* "&d1:news" \'&d1:*\' -@admin -@dangerous)', '-@admin', '-@dangerous', '+wait']);
    expect(argsOf(['acl', 'setuser', 'alice', '(+migrate +config ~* &c*)', '(+get', '&x)'])).toEqual([
      'acl', 'setuser', 'd1:alice', '(+migrate +config ~* &d1:c* -@admin -@dangerous)', '(+get', '&d1:x -@admin -@dangerous)', '-@admin', '-@dangerous', '+wait',
    ]);
    expect(argsOf(['acl', 'deluser', 'a', 'b'])).toEqual(['acl', 'deluser', 'd1:a', 'd1:b']);
    expect(argsOf(['publish', 'news', 'hi'])).toEqual(['publish', 'd1:news', 'hi']);
    expect(argsOf(['pubsub', 'channels'])).toEqual(['pubsub', 'channels', 'd1:*']);
    expect(argsOf(['pubsub', 'channels', 'n*'])).toEqual(['pubsub', 'channels', 'd1:n*']);
    expect(argsOf(['pubsub', 'numsub', 'a', 'b'])).toEqual(['pubsub', 'numsub', 'd1:a', 'd1:b']);
    expect(argsOf(['acl', 'dryrun', 'alice', 'get', 'k'])).toEqual(['acl', 'dryrun', 'd1:alice', 'get', 'k']);
    expect(prepare(['acl', 'resttoken', 'alice', 'pw'])).toEqual({
      kind: 'acl-resttoken',
      label: 'acl|resttoken',
      username: 'alice',
      redisUsername: 'd1:alice',
      password: 'pw',
    });
    expect(refusal(['acl', 'resttoken', 'alice'])).toMatch(/wrong number of arguments/);
  });

  it('lets a read-only token read, and nothing else', () => {
    expect(argsOf(['get', 'k'], readonly)).toEqual(['get', 'k']);
    expect(prepare(['info'], readonly).label).toBe('info');
    expect(argsOf(['EVAL', 'return 1', '0'], readonly)).toEqual(['eval_ro', 'return 1', '0']);
    for (const args of [['set', 'k', 'v'], ['scan', '0'], ['publish', 'c', 'm'], ['flushall'], ['acl', 'setuser', 'x'], ['acl', 'list'], ['acl', 'resttoken', 'u', 'p'], ['ft.cursor', 'DEL', 'idx', '1']]) {
      expect(refusal(args, readonly)).toMatch(/^NOPERM this user has no permissions to run the '/);
    }
    expect(argsOf(['ft.cursor', 'READ', 'idx', '1'], readonly)).toEqual(['ft.cursor', 'READ', 'idx', '1']);
  });
});

describe('rewriteReply', () => {
  const b = (s: string) => Buffer.from(s);
  const text = (r: unknown) => JSON.parse(JSON.stringify(r, (_k, v) => (v?.type === 'Buffer' ? Buffer.from(v.data).toString() : v)));

  it('shows only the tenant’s users and channels, without the prefix', () => {
    expect(text(rewriteReply('acl-users', [b('d1:alice'), b('restash-gateway'), b('d2:bob')], 'd1:'))).toEqual(['alice']);
    expect(text(rewriteReply('acl-list', [b('user d1:alice on ~* +@all'), b('user default off')], 'd1:'))).toEqual(['user alice on ~* +@all']);
    expect(text(rewriteReply('pubsub-numsub', [b('d1:news'), '2'], 'd1:'))).toEqual(['news', '2']);
    expect(text(rewriteReply('acl-whoami', b('restash-gateway'), 'd1:'))).toBe('default');
    expect(text(rewriteReply('acl-whoami', b('d1:alice'), 'd1:'))).toBe('alice');
  });

  it('hides the string-index shadows from SCAN and KEYS, and names the shadowed key for RANDOMKEY', () => {
    expect(text(rewriteReply('scan', ['0', [b('a'), b('__restash_string:a'), b('b')]], ''))).toEqual(['0', ['a', 'b']]);
    expect(text(rewriteReply('keys', [b('__restash_string:a'), b('a')], ''))).toEqual(['a']);
    expect(text(rewriteReply('randomkey', b('__restash_string:a'), ''))).toBe('a');
    expect(rewriteReply('randomkey', null, '')).toBeNull();
  });

  it('drops the INFO lines that identify or locate the process, its files or other servers', () => {
    expect(prepare(['INFO', 'server'])).toMatchObject({ rewrite: 'info' });
    const info = [
      '# Server', 'redis_version:7.0.15', 'os:Linux 6.1 x86_64', 'process_id:4242', 'run_id:abc', 'tcp_port:6391', 'listener0:name=tcp,bind=127.0.0.1,port=6391',
      'executable:/usr/bin/redis-server', 'config_file:/etc/redis.conf', 'uptime_in_seconds:10', '',
      '# Replication', 'role:master', 'slave0:ip=10.0.0.2,port=6380,state=online', 'master_replid:abc', 'master_replid2:000', '',
      '# Keyspace', 'db0:keys=1,expires=0,avg_ttl=0', '',
    ].join('\r\n');
    expect(text(rewriteReply('info', b(info), 'd1:')).split('\r\n')).toEqual([
      '# Server', 'redis_version:7.0.15', 'uptime_in_seconds:10', '', '# Replication', 'role:master', '', '# Keyspace', 'db0:keys=1,expires=0,avg_ttl=0', '',
    ]);
  });
});

describe('module commands (RediSearch 2.10 flags)', () => {
  it('treats the alias and dictionary commands flagged readonly as writes', () => {
    expect(prepare(['FT.ALIASADD', 'a', 'idx'])).toMatchObject({ kind: 'redis', write: true });
    expect(() => prepare(['ft.aliasadd', 'a', 'idx'], readonly)).toThrow(/NOPERM/);
    expect(prepare(['FT.SEARCH', 'idx', '*'], readonly)).toMatchObject({ kind: 'redis', write: false });
    expect(prepare(['json.get', 'k'], readonly)).toMatchObject({ kind: 'redis', write: false });
  });

  it('refuses the server-wide settings, the debugger and the internal commands', () => {
    expect(() => prepare(['FT.CONFIG', 'SET', 'MAXSEARCHRESULTS', '-1'])).toThrow(/server administration/);
    expect(() => prepare(['ft.debug', 'GC_FORCEINVOKE', 'idx'])).toThrow(/not available: 'ft.debug'/);
    expect(() => prepare(['FT._LIST'])).toThrow(/internal to the search module/);
  });
});

describe('where Upstash and Redis differ', () => {
  it('answers COPY of a key onto itself with 0 without asking Redis, and sends other copies as they are', async () => {
    const self = prepare(['copy', 'k', 'k']);
    expect(self.kind).toBe('composite');
    if (self.kind !== 'composite') return;
    const ran: CommandArgs[] = [];
    expect(await self.run({ run: async (args) => (ran.push(args), null) })).toBe('0');
    expect(ran).toEqual([]);
    expect(prepare(['copy', 'k', 'other'])).toMatchObject({ kind: 'redis', args: ['copy', 'k', 'other'] });
    expect(prepare(['copy', 'k', 'k'], { ...standard, transaction: true })).toMatchObject({ kind: 'redis' });
  });

  it('answers SCAN … WITHTYPE with key/type pairs, leaving out keys gone in between', async () => {
    const scan = prepare(['scan', '0', 'match', 'a*', 'withtype']);
    if (scan.kind !== 'composite') throw new Error('not composite');
    const redis = {
      run: async (args: CommandArgs) => {
        if (String(args[0]) === 'scan') return (expect(args).toEqual(['scan', '0', 'match', 'a*']), [Buffer.from('7'), [Buffer.from('a1'), Buffer.from('a2')]]);
        return Buffer.from(String(args[1]) === 'a1' ? 'string' : 'none');
      },
    };
    expect(await scan.run(redis)).toEqual([Buffer.from('7'), [Buffer.from('a1'), Buffer.from('string')]]);
    expect(prepare(['scan', '0', 'type', 'hash'])).toMatchObject({ kind: 'redis' });
  });

  it('trims streams exactly where Upstash does, and expires hash fields now for a negative time', () => {
    expect(upstashArguments('xtrim', ['xtrim', 's', 'MAXLEN', '~', '30'])).toEqual(['xtrim', 's', 'MAXLEN', '=', '30']);
    expect(upstashArguments('xtrim', ['xtrim', 's', 'minid', '~', '5-0'])).toEqual(['xtrim', 's', 'minid', '=', '5-0']);
    // LIMIT is valid only after ~: sent as given.
    expect(upstashArguments('xtrim', ['xtrim', 's', 'MAXLEN', '~', '30', 'LIMIT', '10'])).toEqual(['xtrim', 's', 'MAXLEN', '~', '30', 'LIMIT', '10']);
    expect(upstashArguments('xadd', ['xadd', 's', 'NOMKSTREAM', 'MAXLEN', '~', '3', '*', 'f', 'v'])).toEqual(['xadd', 's', 'NOMKSTREAM', 'MAXLEN', '=', '3', '*', 'f', 'v']);
    // A field or value named like an option is data, never rewritten.
    expect(upstashArguments('xadd', ['xadd', 's', '*', 'MAXLEN', '~'])).toEqual(['xadd', 's', '*', 'MAXLEN', '~']);
    expect(upstashArguments('hexpireat', ['hexpireat', 'h', '-5', 'FIELDS', '1', 'f'])).toEqual(['hexpireat', 'h', '0', 'FIELDS', '1', 'f']);
    expect(upstashArguments('hpexpire', ['hpexpire', 'h', '10', 'FIELDS', '1', '-5'])).toEqual(['hpexpire', 'h', '10', 'FIELDS', '1', '-5']);
    expect(upstashArguments('set', ['set', 'k', '~'])).toEqual(['set', 'k', '~']);
  });

  it("runs EVAL, EVAL_RO and SCRIPT LOAD of a script without Upstash's own shebang flags (@upstash/ratelimit's allow-key-locking)", () => {
    const flagged = '#!lua flags=allow-key-locking\nreturn 1';
    expect(upstashArguments('eval', ['EVAL', flagged, '0'])).toEqual(['EVAL', '#!lua\nreturn 1', '0']);
    expect(upstashArguments('eval', ['eval_ro', '#!lua flags=no-writes,allow-key-locking\nreturn 1', '0'])).toEqual(['eval_ro', '#!lua flags=no-writes\nreturn 1', '0']);
    expect(upstashArguments('script', ['SCRIPT', 'LOAD', flagged])).toEqual(['SCRIPT', 'LOAD', '#!lua\nreturn 1']);
    expect(upstashArguments('eval', ['eval', '#!lua flags=no-writes\nreturn 1', '0'])).toEqual(['eval', '#!lua flags=no-writes\nreturn 1', '0']);
    // Only the script: a key or an argument that looks like one is data.
    expect(upstashArguments('eval', ['eval', 'return ARGV[1]', '1', flagged, flagged])).toEqual(['eval', 'return ARGV[1]', '1', flagged, flagged]);
    expect(upstashArguments('script', ['script', 'exists', flagged])).toEqual(['script', 'exists', flagged]);
    expect(upstashArguments('eval', ['eval'])).toEqual(['eval']);
  });
});
