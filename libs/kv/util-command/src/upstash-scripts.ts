import { createHash } from 'node:crypto';
import { type Arg, type CommandArgs, commandName } from './request';

/**
 * Script shebang flags that Upstash accepts and Redis and Valkey refuse ("ERR Unexpected flag in script shebang"):
 * `allow-key-locking` lets Upstash lock only the keys a script declares in KEYS instead of the whole database. The
 * official libraries send it: every `limit` and `getRemaining` script of @upstash/ratelimit 2.2 starts with
 * `#!lua flags=allow-key-locking` (upstash/ratelimit-js#154), as do upstash-ratelimit 1.2's for Python. A Redis
 * server runs one script at a time anyway, so dropping the flag changes nothing in what the script does.
 */
export const UPSTASH_SCRIPT_FLAGS: ReadonlySet<string> = new Set(['allow-key-locking']);

/**
 * A script with the {@link UPSTASH_SCRIPT_FLAGS} removed from its shebang line (`#!lua flags=allow-key-locking,no-writes`
 * becomes `#!lua flags=no-writes`, `#!lua flags=allow-key-locking` becomes `#!lua`: a shebang without flags, as
 * Redis reads `flags=` with none), the rest byte for byte; undefined when it has none of them. Redis splits the
 * shebang at single spaces and the flags at commas (EVAL, "Script flags"); so does this.
 */
export function withoutUpstashFlags(script: Arg): Arg | undefined {
  // latin1 keeps a Buffer's bytes one character each, whatever the encoding of the rest of the script.
  const text = typeof script === 'string' ? script : script.toString('latin1');
  if (!text.startsWith('#!')) return undefined;
  const end = text.indexOf('\n');
  const shebang = end < 0 ? text : text.slice(0, end);
  let changed = false;
  const parts = shebang.split(' ').flatMap((part) => {
    if (!part.startsWith('flags=')) return [part];
    const flags = part.slice('flags='.length).split(',');
    const kept = flags.filter((flag) => !UPSTASH_SCRIPT_FLAGS.has(flag));
    if (kept.length === flags.length) return [part];
    changed = true;
    return kept.length > 0 ? [`flags=${kept.join(',')}`] : [];
  });
  if (!changed) return undefined;
  const rewritten = parts.join(' ') + (end < 0 ? '' : text.slice(end));
  return typeof script === 'string' ? rewritten : Buffer.from(rewritten, 'latin1');
}

/** The SHA1 digest Redis gives a script (EVALSHA, SCRIPT LOAD): of its bytes, lower-case hex. */
export function scriptDigest(script: Arg): string {
  return createHash('sha1').update(script).digest('hex');
}

/** The commands {@link UpstashScriptDigests.apply} looks at. */
const SCRIPT_COMMANDS: ReadonlySet<string> = new Set(['eval', 'eval_ro', 'evalsha', 'evalsha_ro', 'script']);

/** The commands that name scripts by their digests, and where the digests are: from the first index up to the second (excluded). */
const BY_DIGEST: ReadonlyMap<string, readonly [number, number]> = new Map([
  ['evalsha', [1, 2]],
  ['evalsha_ro', [1, 2]],
  ['script|exists', [2, Infinity]],
]);

/**
 * The digests of scripts that carried {@link UPSTASH_SCRIPT_FLAGS}, each mapped to the digest of the script Redis
 * really caches, the one without them. The libraries call such a script by the digest of its text as they wrote it
 * (@upstash/ratelimit hard-codes them, @upstash/redis's `createScript` computes them), which Upstash knows and Redis
 * cannot: EVALSHA answers NOSCRIPT, the library sends EVAL, which {@link rememberScript} sees, and from then on this
 * process sends EVALSHA with the digest Redis knows. The mapping is a function of the script's text alone, so it is
 * shared by every database; at most `capacity` digests are kept (the oldest go first), and a forgotten one only costs
 * that NOSCRIPT round again. SCRIPT LOAD answers the digest Redis knows, which any gateway replica can run.
 */
export class UpstashScriptDigests {
  private readonly digests = new Map<string, string>();

  constructor(private readonly capacity = 1_000) {}

  /**
   * The command with the digests of flagged scripts this process has seen replaced by the digests Redis knows
   * (EVALSHA, EVALSHA_RO, SCRIPT EXISTS); an EVAL, EVAL_RO or SCRIPT LOAD of a flagged script is remembered.
   * Every other command is returned as given. The flags themselves are removed by the command policy
   * (`upstashArguments`).
   * @param name the command's lower-case name (commandName), when the caller has it
   */
  apply(args: CommandArgs, name = commandName(args)): CommandArgs {
    if (!SCRIPT_COMMANDS.has(name)) return args;
    const label = name === 'script' ? `script|${String(args[1] ?? '').toLowerCase()}` : name;
    if (label === 'eval' || label === 'eval_ro' || label === 'script|load') {
      const script = args[label === 'script|load' ? 2 : 1];
      if (script !== undefined) this.rememberScript(script);
      return args;
    }
    const [from, to] = BY_DIGEST.get(label) ?? [0, 0];
    if (from === to || this.digests.size === 0) return args;
    return args.map((arg, i) => (i >= from && i < to ? (this.digests.get(String(arg).toLowerCase()) ?? arg) : arg));
  }

  /** Remembers the digest Redis gives `script` once its Upstash flags are removed, when it has any. */
  rememberScript(script: Arg): void {
    const stripped = withoutUpstashFlags(script);
    if (stripped === undefined) return;
    const digest = scriptDigest(script);
    if (this.digests.has(digest)) return;
    if (this.digests.size >= this.capacity) this.digests.delete(this.digests.keys().next().value as string);
    this.digests.set(digest, scriptDigest(stripped));
  }
}
