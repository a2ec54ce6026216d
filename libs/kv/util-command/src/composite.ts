import type { Reply } from './encode';
import { KvError } from './kv-error';
import { isShadowKey } from './string-shadow';
import type { CommandArgs } from './request';

/** Runs one command on the tenant's server. @throws the Redis error reply, or a connection error */
export interface ReplyRunner {
  run(args: CommandArgs): Promise<Reply>;
}

/**
 * A command the gateway answers itself, with none or several commands on the tenant's server, where
 * Upstash's documented behaviour differs from Redis's (docs/kv.md, "KV: where Upstash and Redis differ").
 * Never part of a `/multi-exec` transaction: there the command goes to Redis as sent.
 */
export interface CompositeCommand {
  kind: 'composite';
  label: string;
  write: boolean;
  /** @throws the Redis error reply of a command it ran, or a KvError */
  run(redis: ReplyRunner): Promise<Reply>;
}

const text = (r: Reply | undefined): string => (Buffer.isBuffer(r) ? r.toString('utf8') : String(r));
const lower = (a: CommandArgs[number] | undefined): string => (a === undefined ? '' : String(a).toLowerCase());

/**
 * `COPY key key` (same source and destination) answers 0, as Upstash does, where Redis answers
 * "ERR source and destination objects are the same". Undefined when the keys differ.
 */
export function copyOntoItself(args: CommandArgs): CompositeCommand | undefined {
  if (args.length < 3) return undefined;
  const [, source, destination] = args as [unknown, CommandArgs[number], CommandArgs[number]];
  if (!Buffer.from(source).equals(Buffer.from(destination))) return undefined;
  return { kind: 'composite', label: 'copy', write: true, run: async () => '0' };
}

/**
 * `SCAN cursor [MATCH p] [COUNT n] [TYPE t] WITHTYPE` (Upstash): the keys of a SCAN page each
 * followed by its type, `[cursor, [key, type, key, type, …]]`. Runs SCAN without WITHTYPE, then TYPE
 * of every key returned in the same turn; keys gone in between and string-index shadows are left out. Undefined without
 * WITHTYPE.
 */
export function scanWithType(args: CommandArgs): CompositeCommand | undefined {
  const at = args.findIndex((a, i) => i >= 2 && lower(a) === 'withtype');
  if (at < 0) return undefined;
  const scan = args.filter((_, i) => i !== at);
  return {
    kind: 'composite',
    label: 'scan',
    write: false,
    run: async (redis) => {
      const reply = await redis.run(scan);
      if (!Array.isArray(reply) || !Array.isArray(reply[1])) return reply;
      const keys = reply[1].filter((key) => !isShadowKey(key));
      const types = await Promise.all(keys.map((key) => redis.run(['type', key as Buffer])));
      const pairs: Reply[] = [];
      keys.forEach((key, i) => {
        if (text(types[i]) !== 'none') pairs.push(key, types[i] as Reply);
      });
      return [reply[0] as Reply, pairs];
    },
  };
}

/** What Redis answers FCALL_RO (and EVALSHA_RO) of a function or script that lacks the `no-writes` flag. */
const WRITE_FLAG_REFUSAL = /Can not execute a script with write flag using \*_ro command/i;

/**
 * `FCALL_RO function numkeys keys… args…` as Upstash runs it: any function, read-only. Redis refuses
 * FCALL_RO of a function registered without the `no-writes` flag; Upstash runs it and refuses only
 * the writes it attempts ("Write commands are not allowed from read-only scripts"). When Redis
 * refuses, the function's library code (FUNCTION LIST WITHCODE) is run with EVAL_RO under a
 * `redis.register_function` that keeps the one function asked for, so the server still forbids
 * every write inside it.
 */
export function fcallReadOnly(args: CommandArgs): CompositeCommand {
  return {
    kind: 'composite',
    label: 'fcall_ro',
    write: false,
    run: async (redis) => {
      try {
        return await redis.run(['fcall_ro', ...args.slice(1)]);
      } catch (error) {
        if (!(error instanceof Error) || !WRITE_FLAG_REFUSAL.test(error.message)) throw error;
        const name = String(args[1] ?? '');
        const code = libraryCode(await redis.run(['function', 'list', 'withcode']), name);
        if (code === undefined) throw error;
        return redis.run(['eval_ro', readOnlyShim(code, name), ...args.slice(2)]);
      }
    },
  };
}

/** The code of the library that registers `name`, from a FUNCTION LIST WITHCODE reply (RESP2 maps as flat arrays). */
export function libraryCode(reply: Reply, name: string): string | undefined {
  if (!Array.isArray(reply)) return undefined;
  for (const library of reply) {
    if (!Array.isArray(library)) continue;
    const field = (key: string) => library[library.findIndex((v, i) => i % 2 === 0 && text(v) === key) + 1];
    const functions = field('functions');
    if (!Array.isArray(functions)) continue;
    const has = functions.some((fn) => Array.isArray(fn) && fn.some((v, i) => i % 2 === 0 && text(v) === 'name' && text(fn[i + 1]) === name));
    if (has) return text(field('library_code'));
  }
  return undefined;
}

/**
 * A Lua script for EVAL_RO that runs one function of a library: the library's code (its `#!`
 * line removed) under a local `redis` whose `register_function` keeps only `name`, then calls it
 * with KEYS and ARGV. Function names are `[A-Za-z0-9_]+` (Redis refuses others at FUNCTION LOAD),
 * so `name` is quoted as is; any other name matches no library and never gets here.
 */
export function readOnlyShim(code: string, name: string): string {
  if (!/^\w+$/.test(name)) throw new Error(`invalid function name ${name}`);
  const body = code.replace(/^#![^\n]*\n?/, '');
  return [
    'local restash_fn',
    'local redis = setmetatable({ register_function = function(a, b)',
    "  local n, f = a, b; if type(a) == 'table' then n, f = a.function_name, a.callback end",
    `  if n == '${name}' then restash_fn = f end`,
    'end }, { __index = redis })',
    body,
    'return restash_fn(KEYS, ARGV)',
  ].join('\n');
}

/**
 * `CLIENT SETINFO LIB-NAME|LIB-VER <value>` (the SDK's `clientSetinfo`): answered OK without
 * running, as the gateway's pooled connections are never the client's own. Other CLIENT
 * subcommands stay refused.
 * @throws KvError 400 with Redis's texts for a wrong arity or attribute
 */
export function clientSetinfo(args: CommandArgs): CompositeCommand {
  if (args.length !== 4) throw KvError.badRequest(`ERR wrong number of arguments for 'client|setinfo' command`);
  const attribute = lower(args[2]);
  if (attribute !== 'lib-name' && attribute !== 'lib-ver') throw KvError.badRequest(`ERR Unrecognized option '${String(args[2])}'`);
  return { kind: 'composite', label: 'client|setinfo', write: false, run: async () => Buffer.from('OK') };
}

/**
 * A Lua script running one XREADGROUP … NOACK (whole command in ARGV, its streams in KEYS) that
 * removes the consumer again from each stream's group where the read created it: its NOACK read
 * left nothing pending, and Upstash lists no consumer after a NOACK read.
 */
const NOACK_READ = [
  'local group, consumer = ARGV[3], ARGV[4]',
  'local created = {}',
  'for i, key in ipairs(KEYS) do',
  "  local ok, consumers = pcall(redis.call, 'XINFO', 'CONSUMERS', key, group)",
  '  created[i] = true',
  '  if ok then for _, c in ipairs(consumers) do if c[2] == consumer then created[i] = false end end end',
  'end',
  'local reply = redis.call(unpack(ARGV))',
  "for i, key in ipairs(KEYS) do if created[i] then pcall(redis.call, 'XGROUP', 'DELCONSUMER', key, group, consumer) end end",
  'return reply',
].join('\n');

/**
 * `XREADGROUP GROUP g c … NOACK STREAMS k… id…` as Upstash answers it: the entries, and no consumer
 * left behind by the read (XINFO CONSUMERS lists none after a NOACK read by a new consumer; the SDK's
 * own test). Run atomically as one script. Undefined without NOACK or without a well-formed STREAMS
 * part (Redis's own error then).
 */
export function noAckRead(args: CommandArgs): CompositeCommand | undefined {
  const options = args.findIndex((a) => lower(a) === 'streams');
  if (options < 0 || !args.slice(0, options).some((a) => lower(a) === 'noack') || lower(args[1]) !== 'group' || options < 4) return undefined;
  const rest = args.length - options - 1;
  if (rest <= 0 || rest % 2 !== 0) return undefined;
  const keys = args.slice(options + 1, options + 1 + rest / 2);
  return {
    kind: 'composite',
    label: 'xreadgroup',
    write: true,
    run: (redis) => redis.run(['eval', NOACK_READ, String(keys.length), ...keys, 'xreadgroup', ...args.slice(1)]),
  };
}
