import type { CommandTable } from './command-table';
import { type CompositeCommand, clientSetinfo, copyOntoItself, fcallReadOnly, noAckRead, scanWithType } from './composite';
import { checkCountArguments } from './count-arguments';
import type { Reply } from './encode';
import { type JsonDescentRewrite, jsonDescent, jsonDescentReply } from './json-descent';
import { KvError } from './kv-error';
import { hideShadows } from './string-shadow';
import { type Arg, type CommandArgs, commandName } from './request';
import { withoutUpstashFlags } from './upstash-scripts';

/** What a token may do (docs/kv.md, "KV: tokens"): everything supported, reads only, or as a Redis ACL user. */
export type TokenRole = 'standard' | 'readonly' | 'acl';

export interface PolicyContext {
  role: TokenRole;
  /**
   * Scopes this database's Redis ACL user names and Pub/Sub channels, which Redis keeps server-wide
   * (not per logical database), e.g. `demo.main:`. Tenants never see it.
   */
  prefix: string;
  /** The database's reply limit in bytes (its `maxRequestBytes`): counts that would make a reply pass it are refused. */
  maxReplyBytes: number;
  /** Preparing a `/multi-exec` command: everything goes to Redis as sent (no {@link CompositeCommand}). */
  transaction?: boolean;
}

/**
 * How a reply must be rewritten: so that the tenant never sees the prefix or other tenants' names, or (JSON.GET and
 * JSON.MGET with `$..name`) into Upstash's order ({@link JsonDescentRewrite}).
 */
export type ReplyRewrite = 'acl-list' | 'acl-users' | 'acl-whoami' | 'pubsub-channels' | 'pubsub-numsub' | 'info' | 'scan' | 'keys' | 'randomkey' | JsonDescentRewrite;

/** A command that passed the policy, ready for Redis. */
export interface RedisCommand {
  kind: 'redis';
  args: CommandArgs;
  /** Lower-case name, with the subcommand when there is one (`config|get`): for metrics and errors. */
  label: string;
  /** False only for commands Redis flags `readonly`; drives the read-your-writes sync token. */
  write: boolean;
  rewrite?: ReplyRewrite;
}

/** `ACL RESTTOKEN <user> <password>` (docs/kv.md, "KV: tokens"): answered by the gateway, not by Redis. */
export interface RestTokenCommand {
  kind: 'acl-resttoken';
  label: 'acl|resttoken';
  /** The user as the tenant named it. */
  username: string;
  /** The user as Redis knows it (prefixed). */
  redisUsername: string;
  password: string;
}

export type PreparedCommand = RedisCommand | RestTokenCommand | CompositeCommand;

const BLOCKING = 'blocking commands cannot be served over HTTP';
const CONNECTION = 'the gateway manages connection state';
const CLUSTER = 'cluster commands are not supported';
const OUTSIDE = 'it reaches outside this database';
const PROCESS = 'it acts on or reports the server process, not the data';

/** Commands outside the coverage of the KV API (docs/kv.md, "KV: command coverage"), or that would escape the tenant's database. */
const UNSUPPORTED: ReadonlyMap<string, string> = new Map([
  ...['blpop', 'brpop', 'brpoplpush', 'blmove', 'blmpop', 'bzpopmax', 'bzpopmin', 'bzmpop', 'wait', 'waitaof'].map(
    (n) => [n, BLOCKING] as const,
  ),
  ['multi', 'use the /multi-exec endpoint for transactions'],
  ['exec', 'use the /multi-exec endpoint for transactions'],
  ...['watch', 'unwatch', 'discard'].map((n) => [n, 'WATCH, UNWATCH and DISCARD are not supported'] as const),
  ...['subscribe', 'psubscribe', 'unsubscribe', 'punsubscribe'].map(
    (n) => [n, 'use the /subscribe/<channel> or /psubscribe/<pattern> endpoints'] as const,
  ),
  ...['ssubscribe', 'sunsubscribe', 'spublish', 'pubsub|shardchannels', 'pubsub|shardnumsub'].map(
    (n) => [n, 'sharded Pub/Sub is a cluster feature'] as const,
  ),
  ...['auth', 'hello', 'select', 'quit', 'reset', 'client'].map((n) => [n, CONNECTION] as const),
  ...['cluster', 'readonly', 'readwrite', 'asking'].map((n) => [n, CLUSTER] as const),
  ...['swapdb', 'move', 'migrate'].map((n) => [n, OUTSIDE] as const),
  // YES forks a debugging session that takes over the (pooled) connection; SYNC blocks the server.
  ['script|debug', 'the Lua debugger takes over the connection and can block the server'],
  ...['memory|stats', 'memory|doctor', 'memory|malloc-stats', 'memory|purge'].map((n) => [n, PROCESS] as const),
  // RediSearch: FT.CONFIG sets server-wide limits (MAXSEARCHRESULTS …) the platform chose; FT.DEBUG
  // drives the module's garbage collector and dumps its internals; FT._* are its replication internals.
  ['ft.config', 'server administration is reserved to the platform'],
  ['ft.debug', PROCESS],
]);

/**
 * Module commands whose COMMAND flags say `readonly` although they change state (RediSearch 2.10
 * flags its alias and dictionary commands so): treated as writes.
 */
export const MODULE_WRITES: ReadonlySet<string> = new Set(['ft.aliasadd', 'ft.aliasupdate', 'ft.aliasdel', 'ft.dictadd', 'ft.dictdel']);

/**
 * INFO fields that identify or locate the server process, its files or other servers (docs/kv.md,
 * "KV command rules"): removed from every INFO reply. Counters and settings stay.
 */
const INFO_HIDDEN = /^(?:run_id|process_id|process_supervised|executable|config_file|tcp_port|listener\d+|master_replid2?|master_host|master_port|slave\d+|os|gcc_version):/;

/** ACL subcommands flagged `admin` that tenants may still run, on their own (prefixed) users. */
const TENANT_ACL: ReadonlyMap<string, ReplyRewrite | undefined> = new Map([
  ['acl|setuser', undefined],
  ['acl|getuser', undefined],
  ['acl|deluser', undefined],
  ['acl|dryrun', undefined],
  ['acl|list', 'acl-list'],
  ['acl|users', 'acl-users'],
]);

/**
 * Reads a public read-only token may not run (docs/kv.md, "KV: tokens"), commands that change
 * state without a `write` flag, and ACL reads that would show users' rules and password hashes.
 */
const READONLY_REFUSED: ReadonlySet<string> = new Set([
  'scan',
  'keys',
  'publish',
  'acl|setuser',
  'acl|deluser',
  'acl|getuser',
  'acl|list',
  'acl|users',
  'acl|dryrun',
  'acl|resttoken',
  'script|load',
  'script|flush',
  'script|kill',
  'function|kill',
]);

/** Scripts run by a read-only token go through the `_RO` variants, so that Redis refuses writes inside them. */
const READONLY_VARIANT: ReadonlyMap<string, string> = new Map([
  ['eval', 'eval_ro'],
  ['evalsha', 'evalsha_ro'],
  ['fcall', 'fcall_ro'],
]);

/**
 * Checks a command against the KV API's coverage (docs/kv.md, "KV: command coverage") and the token's
 * role, and rewrites it for the tenant's scope: `FLUSHALL` becomes `FLUSHDB`, ACL user names and
 * Pub/Sub channels get the database prefix, scripts of read-only tokens become `*_RO`.
 *
 * Refused: commands unknown to the server; commands outside the coverage table (blocking, WATCH
 * family, SUBSCRIBE family, connection and cluster commands); what would leave the database (SELECT,
 * SWAPDB, MOVE, MIGRATE, COPY … DB); server administration (everything Redis flags or categorises
 * `admin`, except ACL on the tenant's own users); what acts on a connection or the server process
 * (CLIENT, SCRIPT DEBUG, MEMORY STATS/DOCTOR/MALLOC-STATS/PURGE); for read-only tokens, everything
 * Redis flags `write`, plus SCAN, KEYS and PUBLISH; counts that would make a reply pass the database's limit or
 * the server allocate without bound (checkCountArguments); a tenant ACL user without a password. INFO replies lose the lines that identify or
 * locate the process (docs/kv.md, "KV command rules": a tenant owns its data, not the server).
 *
 * @throws KvError 400 with a native-looking error text when refused
 */
export function prepareCommand(args: CommandArgs, table: CommandTable, ctx: PolicyContext): PreparedCommand {
  const name = commandName(args);
  const second = args.length > 1 ? String(args[1]) : undefined;
  if (name === 'acl' && second?.toLowerCase() === 'resttoken') return restToken(args, ctx);

  const spec = table.resolve(name, second);
  if (!spec) throw KvError.badRequest(unknownCommand(args));
  const label = spec.name;
  if (label === 'client|setinfo' && !ctx.transaction) return clientSetinfo(args);
  const refusal =
    UNSUPPORTED.get(label) ?? UNSUPPORTED.get(name) ?? (name.startsWith('ft._') ? 'it is internal to the search module' : undefined) ?? structuralRefusal(name, args, spec.flags);
  if (refusal) throw KvError.badRequest(`ERR Command is not available: '${label}' (${refusal})`);
  const tenantAcl = TENANT_ACL.has(label);
  // Redis classes a command as administration by flag (CONFIG, DEBUG, …) or by ACL category only (LASTSAVE, ROLE).
  if ((spec.flags.has('admin') || spec.categories.has('admin')) && !tenantAcl) {
    throw KvError.badRequest(`ERR Command is not available: '${label}' (server administration is reserved to the platform)`);
  }

  checkCountArguments(name, args, ctx.maxReplyBytes);
  const write = !spec.flags.has('readonly') || MODULE_WRITES.has(name);
  let out = args;
  if (ctx.role === 'readonly') {
    const cursorDel = name === 'ft.cursor' && second?.toLowerCase() === 'del'; // drops a cursor its owner still reads
    if (spec.flags.has('write') || MODULE_WRITES.has(name) || READONLY_REFUSED.has(label) || cursorDel) {
      throw KvError.badRequest(`NOPERM this user has no permissions to run the '${label}' command`);
    }
    const variant = READONLY_VARIANT.get(name);
    if (variant) out = [variant, ...args.slice(1)];
  }

  if (!ctx.transaction) {
    const composite = upstashBehaviour(out === args ? name : commandName(out), out);
    if (composite) return composite;
  }
  const descent = jsonDescent(name, out);
  if (descent) return { kind: 'redis', args: descent.args, label, write, rewrite: descent.rewrite };
  const command: RedisCommand = { kind: 'redis', args: upstashArguments(name, out), label, write };
  return scope(command, ctx.prefix, tenantAcl ? TENANT_ACL.get(label) : undefined);
}

/** The commands whose second argument after the key is a time (seconds, milliseconds or a Unix time): HEXPIRE family. */
const HASH_FIELD_EXPIRES: ReadonlySet<string> = new Set(['hexpire', 'hpexpire', 'hexpireat', 'hpexpireat']);

/**
 * Arguments that Upstash reads otherwise than Redis (docs/kv.md, "KV: where Upstash and Redis differ"), rewritten
 * to Redis's equivalent; every other command is returned as given:
 * - `XADD`/`XTRIM … MAXLEN|MINID ~ n` trim exactly (`=`): Redis's `~` removes only whole stream nodes (100 entries
 *   each by default) and may keep every entry, where Upstash keeps at most about n (the official suite allows n + 1).
 *   With `LIMIT`, which Redis accepts only after `~`, the command goes as sent.
 * - `HEXPIRE`/`HPEXPIRE`/`HEXPIREAT`/`HPEXPIREAT` with a negative time expire the fields now (time 0: Redis deletes
 *   them and answers 2 for each), where Redis answers "invalid expire time".
 * - `EVAL`/`EVAL_RO`/`SCRIPT LOAD` of a script whose shebang carries Upstash's own flags (`#!lua flags=allow-key-locking`,
 *   which @upstash/ratelimit sends) run it without them ({@link withoutUpstashFlags}), where Redis answers "Unexpected
 *   flag in script shebang". Redis then knows the script by the digest of that text (UpstashScriptDigests).
 */
export function upstashArguments(name: string, args: CommandArgs): CommandArgs {
  const script = name === 'eval' || name === 'eval_ro' ? 1 : name === 'script' && String(args[1] ?? '').toLowerCase() === 'load' ? 2 : -1;
  if (script > 0) {
    const stripped = script < args.length ? withoutUpstashFlags(args[script] as Arg) : undefined;
    return stripped === undefined ? args : args.map((a, i) => (i === script ? stripped : a));
  }
  if (HASH_FIELD_EXPIRES.has(name)) {
    return args.length > 2 && /^-\d+$/.test(String(args[2])) ? args.map((a, i) => (i === 2 ? '0' : a)) : args;
  }
  if (name !== 'xadd' && name !== 'xtrim') return args;
  const lower = (i: number) => (i < args.length ? String(args[i]).toLowerCase() : '');
  for (let i = 2; i < args.length; ) {
    const token = lower(i);
    if (token === 'maxlen' || token === 'minid') {
      const approximate = lower(i + 1) === '~';
      const limited = lower(i + (approximate ? 3 : 2)) === 'limit';
      return approximate && !limited ? args.map((a, at) => (at === i + 1 ? '=' : a)) : args;
    }
    // XADD's options before the trimming ones; anything else is the ID (XADD) or a syntax error for Redis to report.
    if (name === 'xadd' && ['nomkstream', 'keepref', 'delref', 'acked'].includes(token)) i++;
    else return args;
  }
  return args;
}

/** Where Upstash's documented behaviour differs from Redis's (docs/kv.md, "KV: where Upstash and Redis differ"). */
function upstashBehaviour(name: string, args: CommandArgs): CompositeCommand | undefined {
  switch (name) {
    case 'copy':
      return copyOntoItself(args);
    case 'scan':
      return scanWithType(args);
    case 'fcall_ro':
      return fcallReadOnly(args);
    case 'xreadgroup':
      return noAckRead(args);
  }
  return undefined;
}

/** Refusals that depend on arguments or flags rather than on the name alone. */
function structuralRefusal(name: string, args: CommandArgs, flags: ReadonlySet<string>): string | undefined {
  if (name === 'xread' || name === 'xreadgroup') {
    const streams = args.findIndex((a) => String(a).toLowerCase() === 'streams');
    const options = streams < 0 ? args : args.slice(0, streams);
    return options.some((a) => String(a).toLowerCase() === 'block') ? BLOCKING : undefined;
  }
  if (name === 'copy' && args.slice(3).some((a) => String(a).toLowerCase() === 'db')) return OUTSIDE;
  return flags.has('blocking') ? BLOCKING : undefined;
}

function scope(command: RedisCommand, prefix: string, rewrite: ReplyRewrite | undefined): RedisCommand {
  const args = command.args;
  switch (command.label) {
    case 'flushall':
      return { ...command, args: ['flushdb', ...args.slice(1)] };
    case 'publish':
      return { ...command, args: withPrefix(args, prefix, 1, 2) };
    case 'acl|setuser':
      return { ...command, args: [...withPrefix(args.slice(0, 3), prefix, 2), ...scopeAclRules(args.slice(3), prefix)] };
    case 'acl|getuser':
    case 'acl|dryrun':
      return { ...command, args: withPrefix(args, prefix, 2, 3) };
    case 'acl|deluser':
      return { ...command, args: withPrefix(args, prefix, 2) };
    case 'acl|whoami':
      return { ...command, rewrite: 'acl-whoami' };
    case 'pubsub|channels':
      return { ...command, args: withPrefix(args.length > 2 ? args : [...args, '*'], prefix, 2), rewrite: 'pubsub-channels' };
    case 'pubsub|numsub':
      return { ...command, args: withPrefix(args, prefix, 2), rewrite: 'pubsub-numsub' };
    case 'info':
    case 'scan':
    case 'keys':
    case 'randomkey':
      return { ...command, rewrite: command.label as 'info' | 'scan' | 'keys' | 'randomkey' };
  }
  return rewrite ? { ...command, rewrite } : command;
}

/**
 * The rules of a tenant's `ACL SETUSER`, scoped like its commands (docs/kv.md, "KV: tokens"): channel patterns
 * (`&chan`, `allchannels`, also inside selectors `(…)`) get the database prefix that PUBLISH and SUBSCRIBE add,
 * and {@link TENANT_USER_DENIED} ends the root rules and every selector, so that whatever the tenant grants, its
 * users never get server administration (`@admin`: CONFIG, ACL on other users, DEBUG, MODULE, SHUTDOWN,
 * replication, MONITOR …) nor the `@dangerous` commands (MIGRATE, which would send keys to any server, KEYS,
 * FLUSHALL, INFO, CLIENT …), even when they log in on the server's port directly. Passwords and their hashes
 * (`>`, `<`, `#`, `!`) pass as given; `nopass` is refused, since a user without a password logs in with any.
 * A selector may span arguments (Redis joins them with spaces from the one starting with `(` to the one ending
 * with `)`), so rules inside one are found by spaces.
 * @throws KvError 400 for `nopass`
 */
function scopeAclRules(rules: CommandArgs, prefix: string): CommandArgs {
  let inSelector = false;
  const scoped = rules.map((rule): Arg => {
    const text = String(rule);
    if (!inSelector && !text.startsWith('(')) {
      if (text.toLowerCase() === 'nopass') {
        throw KvError.badRequest(`ERR Error in ACL SETUSER modifier 'nopass': not allowed here (a user without a password logs in with any password); set one with '>password'`);
      }
      if (text.startsWith('&')) return `&${prefix}${text.slice(1)}`;
      return text.toLowerCase() === 'allchannels' ? `&${prefix}*` : rule;
    }
    inSelector = true;
    // Redis splits a selector like a command line, quotes included: `("&news")` is the rule `&news`.
    let out = text.replace(/(^|[\s("'])&/g, `$1&${prefix}`).replace(/(^|[\s("'])allchannels(?=$|[\s)"'])/gi, `$1&${prefix}*`);
    if (out.endsWith(')')) {
      out = `${out.slice(0, -1)} ${TENANT_USER_DENIED.join(' ')})`;
      inSelector = false;
    }
    return out;
  });
  return [...scoped, ...TENANT_USER_DENIED, ...TENANT_USER_GRANTED];
}

/**
 * The rules added at the root of every tenant `ACL SETUSER`, after {@link TENANT_USER_DENIED}: `WAIT`, which the
 * gateway sends after a user's writes on its connection when the database's durability is `replicated` (docs/operations.md, "KV
 * databases: durability"); it only blocks that connection.
 */
export const TENANT_USER_GRANTED: readonly string[] = ['+wait'];

/** The ACL rules that end every tenant `ACL SETUSER`, at the root and in each selector (see {@link scopeAclRules}). */
export const TENANT_USER_DENIED: readonly string[] = ['-@admin', '-@dangerous'];

/** A copy of `args` whose arguments from index `from` up to (not including) `to` carry the prefix. */
function withPrefix(args: CommandArgs, prefix: string, from: number, to = args.length): CommandArgs {
  return args.map((a, i) => {
    if (i < from || i >= to) return a;
    return typeof a === 'string' ? prefix + a : Buffer.concat([Buffer.from(prefix), a]);
  });
}

function restToken(args: CommandArgs, ctx: PolicyContext): RestTokenCommand {
  if (ctx.role === 'readonly') throw KvError.badRequest(`NOPERM this user has no permissions to run the 'acl|resttoken' command`);
  if (args.length !== 4) throw KvError.badRequest(`ERR wrong number of arguments for 'acl|resttoken' command`);
  const username = String(args[2]);
  return { kind: 'acl-resttoken', label: 'acl|resttoken', username, redisUsername: ctx.prefix + username, password: String(args[3]) };
}

function unknownCommand(args: CommandArgs): string {
  const rest = args
    .slice(1)
    .map((a) => `'${String(a).slice(0, 128)}' `)
    .join('');
  return `ERR unknown command '${String(args[0])}', with args beginning with: ${rest}`;
}

/**
 * Rewrites a reply of a scoped command (see {@link prepareCommand}) so that only the tenant's own
 * users and channels appear, under the names the tenant gave them, INFO without the process's lines, SCAN,
 * KEYS and RANDOMKEY without the gateway's string-index shadows ({@link hideShadows}), and JSON.GET/JSON.MGET
 * with `$..name` in Upstash's order ({@link jsonDescentReply}).
 */
export function rewriteReply(rewrite: ReplyRewrite | undefined, reply: Reply, prefix: string): Reply {
  if (!rewrite || reply instanceof Error || reply === null) return reply;
  if (typeof rewrite === 'object') return jsonDescentReply(rewrite, reply);
  const text = (r: Reply) => (Buffer.isBuffer(r) ? r.toString('utf8') : String(r));
  const strip = (r: Reply): Reply => Buffer.from(text(r).slice(prefix.length));
  const own = (r: Reply) => text(r).startsWith(prefix);
  const list = Array.isArray(reply) ? reply : [];
  switch (rewrite) {
    case 'acl-users':
    case 'pubsub-channels':
      return list.filter(own).map(strip);
    case 'acl-list': {
      const marker = `user ${prefix}`;
      return list.filter((line) => text(line).startsWith(marker)).map((line) => Buffer.from(`user ${text(line).slice(marker.length)}`));
    }
    case 'acl-whoami':
      return own(reply) ? strip(reply) : Buffer.from('default');
    case 'pubsub-numsub':
      return list.map((item, i) => (i % 2 === 0 ? strip(item) : item));
    case 'scan':
    case 'keys':
    case 'randomkey':
      return hideShadows(rewrite, reply);
    case 'info':
      return Buffer.from(
        text(reply)
          .split('\r\n')
          .filter((line) => !INFO_HIDDEN.test(line))
          .join('\r\n'),
      );
  }
}
