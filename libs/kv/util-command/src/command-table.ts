/** What Redis's `COMMAND` says about one command or subcommand (name like `get` or `config|set`). */
export interface CommandSpec {
  name: string;
  /** Redis arity: n = exactly n arguments (name included), -n = at least n. */
  arity: number;
  /** COMMAND flags: `write`, `readonly`, `admin`, `blocking`, `pubsub`, `noscript`, … */
  flags: ReadonlySet<string>;
  /** ACL categories without the `@`: `read`, `write`, `dangerous`, … */
  categories: ReadonlySet<string>;
  subcommands: ReadonlyMap<string, CommandSpec>;
  /**
   * Where the keys are (COMMAND's first key, last key and step): argument indexes counted with the name at 0,
   * `last` negative from the end (-1: the last argument); first 0 for a command without keys. Commands flagged
   * `movablekeys` have keys elsewhere too (see {@link keyArguments}).
   */
  keys: { first: number; last: number; step: number };
}

/**
 * The key arguments of a command line by its spec's key positions (Redis's COMMAND first/last/step).
 * @returns the keys, or undefined when the command has movable keys (flag `movablekeys`: EVAL, SORT … STORE,
 *   ZUNIONSTORE …), for which only the server can tell (`COMMAND GETKEYS`)
 */
export function keyArguments(spec: CommandSpec, args: readonly (string | Buffer)[]): Array<string | Buffer> | undefined {
  if (spec.flags.has('movablekeys')) return undefined;
  const { first, step } = spec.keys;
  if (first <= 0 || step <= 0) return [];
  const last = spec.keys.last < 0 ? args.length + spec.keys.last : spec.keys.last;
  const out: Array<string | Buffer> = [];
  for (let i = first; i <= last && i < args.length; i += step) out.push(args[i] as string | Buffer);
  return out;
}

/**
 * The command table of one Redis server, built from its own `COMMAND` reply, so that
 * classification (read-only, administration, blocking) follows the server actually reached and
 * never a hand-kept list (docs/kv.md, "KV command rules").
 */
export class CommandTable {
  private constructor(private readonly specs: ReadonlyMap<string, CommandSpec>) {}

  /**
   * @param reply the reply of `COMMAND` (or `COMMAND INFO …`) with strings decoded
   * @throws Error when the reply does not have the documented shape
   */
  static fromCommandReply(reply: unknown): CommandTable {
    if (!Array.isArray(reply)) throw new Error('COMMAND reply is not an array');
    const specs = new Map<string, CommandSpec>();
    for (const entry of reply) {
      if (entry === null) continue; // COMMAND INFO of an unknown name
      const spec = parseEntry(entry);
      specs.set(spec.name, spec);
    }
    return new CommandTable(specs);
  }

  /** The spec of a top-level command, by lower-case name. */
  get(name: string): CommandSpec | undefined {
    return this.specs.get(name);
  }

  /**
   * The most specific spec for a command line: the subcommand's (`config|set`) when the command has
   * subcommands and the second argument names one, else the command's own; undefined when unknown.
   */
  resolve(name: string, second: string | undefined): CommandSpec | undefined {
    const spec = this.specs.get(name);
    if (!spec || spec.subcommands.size === 0 || second === undefined) return spec;
    return spec.subcommands.get(`${name}|${second.toLowerCase()}`) ?? spec;
  }

  get size(): number {
    return this.specs.size;
  }
}

function parseEntry(entry: unknown): CommandSpec {
  if (!Array.isArray(entry) || entry.length < 7) throw new Error('malformed COMMAND entry');
  const [name, arity, flags, first, last, step, categories, , , subcommands] = entry as unknown[];
  const subs = new Map<string, CommandSpec>();
  if (Array.isArray(subcommands)) {
    for (const sub of subcommands) {
      const spec = parseEntry(sub);
      subs.set(spec.name, spec);
    }
  }
  return {
    name: String(name).toLowerCase(),
    arity: Number(arity),
    flags: new Set((flags as unknown[]).map((f) => String(f).toLowerCase())),
    categories: new Set((categories as unknown[]).map((c) => String(c).replace(/^@/, '').toLowerCase())),
    subcommands: subs,
    keys: { first: Number(first) || 0, last: Number(last) || 0, step: Number(step) || 0 },
  };
}
