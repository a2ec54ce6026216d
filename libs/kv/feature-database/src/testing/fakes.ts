import { ReplyError } from 'ioredis';
import type { KvBackend, Outcome, ReplicaWait, TransactionOutcome } from '@restash/kv/data-access-redis';
import { type CommandArgs, CommandTable, type Reply } from '@restash/kv/util-command';
import type { KvDatabaseRecord, TokenRecord } from '@restash/shared/data-access-registry';
import type { KvGrant, KvObserver, KvRegistry, KvRuntimeRecords, KvSession } from '../ports';

/**
 * In-memory fakes of the feature's ports (ports.ts) for unit tests. The real Redis behind them is tested by
 * apps/kv-gateway's integration tests (Redis 8.2 and Valkey 9.1).
 */

/** A COMMAND entry in the shape Redis 7 sends: name, arity, flags, first/last key and step, categories, tips, key specs, subcommands. */
const entry = (name: string, arity: number, flags: string[], keys: [number, number, number] = [0, 0, 0], subcommands: unknown[] = []) => [
  name,
  arity,
  flags,
  ...keys,
  [],
  [],
  [],
  subcommands,
];

/** A command table of a few commands (GET, SET, MONITOR, EVAL, EVALSHA, ACL SETUSER/DELUSER/LIST/GETUSER). */
export const TABLE = CommandTable.fromCommandReply([
  entry('get', 2, ['readonly', 'fast'], [1, 1, 1]),
  entry('set', -3, ['write', 'denyoom'], [1, 1, 1]),
  entry('eval', -3, ['noscript', 'stale']),
  entry('evalsha', -3, ['noscript', 'stale']),
  entry('acl', -2, [], [0, 0, 0], [
    entry('acl|setuser', -3, ['admin', 'noscript']),
    entry('acl|deluser', -3, ['admin', 'noscript']),
    entry('acl|list', 2, ['admin', 'noscript']),
    entry('acl|getuser', 3, ['admin', 'noscript']),
  ]),
]);

/** A Redis error reply, as ioredis throws it. */
export const replyError = (message: string): Error => new (ReplyError as unknown as new (message: string) => Error)(message);

/**
 * A database's backend that keeps string keys in a map and records what it was sent. `fail` makes the next calls
 * throw it (a connection error, a NotReplicatedError); `reply` answers a command instead of the map.
 */
export class FakeBackend {
  readonly url: string;
  readonly keys = new Map<string, string>();
  readonly sent: CommandArgs[] = [];
  readonly dropped: string[] = [];
  readonly waits: Array<ReplicaWait | undefined> = [];
  fail: Error | undefined;
  reply: ((args: CommandArgs) => Reply | undefined) | undefined;
  runId = 'run-kv';
  maxReplyBytes = 0;
  tableReads = 0;

  constructor(url = 'redis://127.0.0.1:6391/0') {
    this.url = url;
  }

  async run(args: CommandArgs, wait?: ReplicaWait): Promise<Reply> {
    this.sent.push(args);
    this.waits.push(wait);
    if (this.fail) throw this.fail;
    const answered = this.reply?.(args);
    if (answered !== undefined) return answered;
    const [name, key, value] = args.map(String);
    if (name === 'get') return this.keys.has(key as string) ? Buffer.from(this.keys.get(key as string) as string) : null;
    if (name === 'set') {
      this.keys.set(key as string, value as string);
      return 'OK';
    }
    throw replyError(`ERR unknown command '${name}'`);
  }

  async pipeline(commands: CommandArgs[], wait?: ReplicaWait): Promise<Outcome[]> {
    const outcomes: Outcome[] = [];
    for (const args of commands) {
      try {
        outcomes.push({ ok: true, reply: await this.run(args, wait) });
      } catch (error) {
        if (error === this.fail) throw error;
        outcomes.push({ ok: false, error: (error as Error).message });
      }
    }
    return outcomes;
  }

  async transaction(commands: CommandArgs[], wait?: ReplicaWait): Promise<TransactionOutcome> {
    return { outcomes: await this.pipeline(commands, wait) } as TransactionOutcome;
  }

  async table(): Promise<CommandTable> {
    this.tableReads++;
    if (this.fail) throw this.fail;
    return TABLE;
  }

  currentTable(): CommandTable | undefined {
    return this.tableReads > 0 ? TABLE : undefined;
  }

  async serverRunId(): Promise<string> {
    if (this.fail) throw this.fail;
    return this.runId;
  }

  dropUser(user: string): void {
    this.dropped.push(user);
  }

  armScriptKiller(): void {}

  async killScript(): Promise<string> {
    return 'OK';
  }

  async asReadonly(): Promise<FakeBackend> {
    return this;
  }

  async asUser(): Promise<FakeBackend> {
    return this;
  }

  async monitor(): Promise<{ close(): void }> {
    return { close: () => undefined };
  }

  async subscribe(): Promise<{ close(): void }> {
    return { close: () => undefined };
  }
}

/** Counts commands and backend failures. */
export class RecordingObserver implements KvObserver {
  readonly commands: string[] = [];
  readonly errors: string[] = [];

  countCommand(tenant: string, command: string): void {
    this.commands.push(`${tenant}:${command}`);
  }

  backendError(tenant: string, kind: 'connection' | 'replication'): void {
    this.errors.push(`${tenant}:${kind}`);
  }
}

/** Records the registry writes of the KV API, and binds servers as RuntimeStore.bindKvServer does (first come). */
export class FakeRuntimeRecords implements KvRuntimeRecords {
  readonly bindings = new Map<string, string>();
  readonly aclUsers: Array<[string, string | null]> = [];
  readonly announced: string[] = [];
  readonly tokens: TokenRecord[] = [];

  async bindKvServer(runId: string, databaseId: string): Promise<string | null> {
    const bound = this.bindings.get(runId);
    if (bound && bound !== databaseId) return bound;
    this.bindings.set(runId, databaseId);
    return null;
  }

  async putKvAclUser(_tenant: string, _database: string, user: string, rules: string[] | null): Promise<void> {
    this.aclUsers.push([user, rules === null ? null : rules.join(' ')]);
  }

  async announce(key: string): Promise<void> {
    this.announced.push(key);
  }

  async putRuntimeToken(record: TokenRecord): Promise<void> {
    this.tokens.push(record);
  }
}

/** A registry that knows one database and hands change listeners to the test. */
export class FakeRegistry implements KvRegistry {
  readonly listeners: Array<(key: string) => void> = [];
  database: KvDatabaseRecord | null;

  constructor(database: KvDatabaseRecord | null) {
    this.database = database;
  }

  onChange(listener: (key: string) => void): void {
    this.listeners.push(listener);
  }

  async kvDatabase(): Promise<KvDatabaseRecord | null> {
    return this.database;
  }

  async kvAclUserRules(): Promise<string[] | null> {
    return null;
  }
}

/** Database `acme.main` on `redisUrl`. */
export function databaseRecord(redisUrl = 'redis://127.0.0.1:6391/0'): KvDatabaseRecord {
  return { id: 'acme.main', tenant: 'acme', name: 'main', redisUrl, maxRequestBytes: 1_000_000, dailyRequestLimit: 0 } as KvDatabaseRecord;
}

/** The grant of a `standard` token of `database`. */
export function grant(database: KvDatabaseRecord = databaseRecord(), role: TokenRecord['role'] = 'standard'): KvGrant {
  return { tenant: database.tenant, resource: database, token: { digest: 'd', tenant: database.tenant, api: 'kv', resource: database.id, role } as TokenRecord };
}

/** A session of `backend` for a token of `role`. */
export function session(backend: FakeBackend, role: KvSession['role'] = 'standard'): KvSession {
  const database = databaseRecord(backend.url);
  return {
    grant: grant(database, role),
    tenant: 'acme',
    token: 't',
    database,
    role,
    backend: backend as unknown as KvBackend,
    runner: backend,
    table: TABLE,
    db: 0,
    policy: { role, prefix: 'acme.main:', maxReplyBytes: 1_000_000 },
  };
}
