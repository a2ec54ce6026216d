import { randomBytes } from 'node:crypto';
import { Logger } from '@nestjs/common';
import {
  type CommandRunner,
  type MonitorHandlers,
  type Outcome,
  ServerDemotedError,
  type Subscription,
  type SubscriptionHandlers,
  isDemotedReply,
  isReplyError,
} from '@restash/kv/data-access-redis';
import {
  type BatchItem,
  type CommandArgs,
  type CompositeCommand,
  KvError,
  type PreparedCommand,
  type RedisCommand,
  type Reply,
  UpstashScriptDigests,
  commandName,
  prepareCommand,
  rewriteReply,
} from '@restash/kv/util-command';
import { isSearchCommand, isSearchWrite, runSearchCommand } from '@restash/kv/util-search';
import { logEvent } from '@restash/shared/util-http';
import type { AclUsers } from './acl-users';
import type { KvBackendFailures } from './backend-failures';
import type { KvObserver, KvSession } from './ports';
import { SearchShadows } from './search-shadows';

/** What a command label runs that the server can be asked to kill (KvBackend.killScript). */
const SCRIPT_KINDS: ReadonlyMap<string, 'script' | 'function'> = new Map([
  ['eval', 'script'],
  ['evalsha', 'script'],
  ['eval_ro', 'script'],
  ['evalsha_ro', 'script'],
  ['fcall', 'function'],
  ['fcall_ro', 'function'],
]);

/** How often a kill is sent again while the server answers NOTBUSY (the script has not started, or Redis does not read yet). */
const KILL_RETRY_MS = 250;

/** What a command, pipeline or transaction answered, with the `upstash-sync-token` of that answer (docs/kv.md, "KV: read-your-writes"). */
export interface Answered<T> {
  result: T;
  syncToken: string;
}

/**
 * The KV API's commands (docs/kv.md, "KV: request forms"): single commands, pipelines, transactions, subscriptions and
 * MONITOR of an authenticated session (KvSessions), through the command policy (libs/kv/util-command), returning
 * Redis's replies as the tenant sees them with each answer's `upstash-sync-token`. Admission, encoding and HTTP
 * stay in the app's routes.
 *
 * Methods throw KvError: 400 for a refused or failed command, 503 when Redis cannot be reached; TenantDenied
 * `registry-unavailable` when an ACL change cannot be recorded.
 */
export class KvCommands {
  private readonly logger = new Logger('KvCommands');
  /**
   * Read-your-writes (docs/kv.md, "KV: read-your-writes"): this process's id and, per database, a counter
   * bumped by every request that writes; each answer carries the count its own request produced.
   */
  private readonly instance = randomBytes(6).toString('hex');
  private readonly writes = new Map<string, number>();
  /** The shadows of string keys and stream entries under `SEARCH.CREATE … ON STRING|STREAM` indexes, kept in step after writes. */
  private readonly shadows = new SearchShadows();
  /** The digests Redis knows for scripts sent with Upstash's own shebang flags (UpstashScriptDigests). */
  private readonly scriptDigests = new UpstashScriptDigests();

  /**
   * @param scriptTimeoutMs a script or function running longer is killed (REDIS_SCRIPT_TIMEOUT_MS)
   */
  constructor(
    private readonly aclUsers: AclUsers,
    private readonly failures: KvBackendFailures,
    private readonly observer: KvObserver,
    private readonly scriptTimeoutMs: number,
  ) {}

  /**
   * The `upstash-sync-token` of an answer of `database`: after a write, a value no earlier answer
   * of this process had (so each of several concurrent writes gets its own); after a read, the
   * database's latest.
   */
  syncToken(database: string, wrote: boolean): string {
    let count = this.writes.get(database) ?? 0;
    if (wrote) this.writes.set(database, ++count);
    return `${this.instance}-${count}`;
  }

  /**
   * One command (docs/kv.md, "KV: request forms").
   * @returns its reply, as the tenant sees it (database prefix removed)
   * @throws KvError 400 for a refused or failed command, 503 when Redis cannot be reached
   */
  async single(session: KvSession, args: CommandArgs): Promise<Answered<Reply>> {
    const prepared = this.prepare(session, args);
    this.count(session, prepared.label);
    const id = session.database.id;
    if (prepared.kind === 'acl-resttoken') {
      const token = Buffer.from(await this.aclUsers.mintAclToken(session, prepared));
      return { result: token, syncToken: this.syncToken(id, false) };
    }
    let reply: Reply;
    try {
      reply = await this.killingSlowScripts(session, [prepared.label], prepared.kind === 'composite' ? prepared.run(writer(session, prepared.write)) : session.runner.run(prepared.args, prepared.write ? session.wait : undefined));
    } catch (error) {
      if (prepared.write) this.syncToken(id, true);
      if (isReplyError(error) && !isDemotedReply(error.message)) throw KvError.badRequest(error.message);
      throw this.failures.failure(session.tenant, error);
    } finally {
      if (prepared.kind === 'redis' && changesAclUsers(prepared)) await this.aclUsers.afterAclChanges(session, [prepared]);
    }
    if (prepared.kind === 'redis' && prepared.write) await this.shadows.afterWrites(session, [prepared.args]);
    const syncToken = this.syncToken(id, prepared.write);
    return { result: prepared.kind === 'redis' ? rewriteReply(prepared.rewrite, reply, session.policy.prefix) : reply, syncToken };
  }

  /**
   * The command policy for one command of a session (scripts called by the digest Upstash gives them, see
   * UpstashScriptDigests), and the gateway's own commands: SEARCH.* (Upstash Search over the Redis Query Engine,
   * docs/kv.md, "KV: Search").
   * @throws KvError 400 when refused
   */
  private prepare(session: KvSession, args: CommandArgs, transaction = false): PreparedCommand {
    const name = commandName(args);
    if (!isSearchCommand(name)) return prepareCommand(this.scriptDigests.apply(args, name), session.table, { ...session.policy, transaction });
    if (transaction) throw KvError.badRequest(`ERR Command is not available: '${name}' (SEARCH commands cannot run in a transaction)`);
    const write = isSearchWrite(name);
    if (write && session.role === 'readonly') throw KvError.badRequest(`NOPERM this user has no permissions to run the '${name}' command`);
    const queryEngine = session.table.get('ft.search') !== undefined;
    const onShadowedIndexChange = () => this.shadows.forget(session.database.id);
    return { kind: 'composite', label: name, write, run: (redis) => runSearchCommand(args, redis, { queryEngine, db: session.db, onShadowedIndexChange }) };
  }

  /**
   * `/pipeline` (docs/kv.md, "KV: request forms"): in order, not atomic; a refused or failing command
   * yields its own `{error}` item and the others still run.
   */
  async pipeline(session: KvSession, commands: CommandArgs[]): Promise<Answered<BatchItem[]>> {
    const prepared = commands.map((args): RedisCommand | CompositeCommand | KvError => {
      try {
        const command = this.prepare(session, args);
        if (command.kind === 'acl-resttoken') return KvError.badRequest('ERR ACL RESTTOKEN must be sent as a single command');
        this.count(session, command.label);
        return command;
      } catch (error) {
        if (error instanceof KvError) return error;
        throw error;
      }
    });
    const items: BatchItem[] = [];
    const wrote = prepared.some((p) => !(p instanceof KvError) && p.write);
    try {
      // In order: each run of plain commands goes to Redis as one pipeline; a composite command runs
      // alone, after everything before it was answered.
      for (let start = 0; start < prepared.length; ) {
        const first = prepared[start] as RedisCommand | CompositeCommand | KvError;
        if (first instanceof KvError) {
          items.push({ error: first.message });
          start++;
        } else if (first.kind === 'composite') {
          items.push(await this.composite(session, first));
          start++;
        } else {
          let end = start;
          while (end < prepared.length && (prepared[end] as { kind?: string }).kind === 'redis') end++;
          const segment = prepared.slice(start, end) as RedisCommand[];
          const outcomes = await this.runTogether(session, segment, (args, wait) => session.runner.pipeline(args, wait));
          const demoted = outcomes.flatMap((o) => (o.ok ? [] : [o.error])).find(isDemotedReply);
          if (demoted !== undefined) throw this.failures.failure(session.tenant, new ServerDemotedError(demoted));
          if (segment.some(changesAclUsers)) await this.aclUsers.afterAclChanges(session, segment);
          await this.shadows.afterWrites(session, written(segment, outcomes));
          segment.forEach((command, i) => items.push(this.item(session, command, outcomes[i])));
          start = end;
        }
      }
    } catch (error) {
      if (wrote) this.syncToken(session.database.id, true);
      throw error;
    }
    return { result: items, syncToken: this.syncToken(session.database.id, wrote) };
  }

  private async composite(session: KvSession, command: CompositeCommand): Promise<BatchItem> {
    try {
      return { reply: await this.killingSlowScripts(session, [command.label], command.run(writer(session, command.write))) };
    } catch (error) {
      if (error instanceof KvError && error.status === 400) return { error: error.message };
      if (isReplyError(error) && !isDemotedReply(error.message)) return { error: error.message };
      throw this.failures.failure(session.tenant, error);
    }
  }

  /**
   * `/multi-exec` (docs/kv.md, "KV: request forms"): atomic. Discarded as a whole, with one error and
   * nothing run, when any command is refused or fails to queue; a command failing at run time yields
   * its `{error}` item.
   * @throws KvError 400 when discarded
   */
  async transaction(session: KvSession, commands: CommandArgs[]): Promise<Answered<BatchItem[]>> {
    const prepared = commands.map((args) => {
      const command = this.prepare(session, args, true);
      if (command.kind === 'acl-resttoken') throw KvError.badRequest('ERR ACL RESTTOKEN is not allowed in a transaction');
      if (command.kind !== 'redis') throw KvError.badRequest(`ERR '${command.label}' is not allowed in a transaction`);
      return command;
    });
    for (const command of prepared) this.count(session, command.label);
    const outcome = await this.runTogether(session, prepared, (args, wait) => session.runner.transaction(args, wait));
    const errors = 'discarded' in outcome ? [outcome.discarded] : outcome.outcomes.flatMap((o) => (o.ok ? [] : [o.error]));
    const demoted = errors.find(isDemotedReply);
    if (demoted !== undefined) throw this.failures.failure(session.tenant, new ServerDemotedError(demoted));
    if ('discarded' in outcome) throw KvError.badRequest(outcome.discarded);
    const syncToken = this.syncToken(session.database.id, prepared.some((c) => c.write));
    if (prepared.some(changesAclUsers)) await this.aclUsers.afterAclChanges(session, prepared);
    await this.shadows.afterWrites(session, written(prepared, outcome.outcomes));
    return { result: prepared.map((command, i) => this.item(session, command, outcome.outcomes[i])), syncToken };
  }

  /**
   * SUBSCRIBE or PSUBSCRIBE for a server-sent-event stream (docs/kv.md, "KV: subscribe"), in the database's
   * channel scope and, for ACL tokens, as the ACL user.
   * @param channel the channel or pattern as the tenant names it
   * @throws KvError 400 when Redis refuses, 503 when it cannot be reached
   */
  async subscribe(session: KvSession, kind: 'subscribe' | 'psubscribe', channel: string, handlers: SubscriptionHandlers): Promise<Subscription> {
    this.count(session, kind);
    try {
      return await session.backend.subscribe(kind, session.policy.prefix + channel, handlers, session.user);
    } catch (error) {
      if (isReplyError(error)) throw KvError.badRequest(error.message);
      throw this.failures.failure(session.tenant, error);
    }
  }

  /**
   * MONITOR of the database for a server-sent-event stream (docs/kv.md, "KV: monitor"): the commands run
   * on the database's own server and logical database, for standard tokens only.
   * @throws KvError 400 for read-only and ACL tokens, 503 when Redis cannot be reached
   */
  async monitor(session: KvSession, handlers: MonitorHandlers): Promise<Subscription> {
    if (session.role !== 'standard') throw KvError.badRequest(`NOPERM this user has no permissions to run the 'monitor' command`);
    this.count(session, 'monitor');
    try {
      return await session.backend.monitor(session.db, handlers);
    } catch (error) {
      if (isReplyError(error)) throw KvError.badRequest(error.message);
      throw this.failures.failure(session.tenant, error);
    }
  }

  private item(session: KvSession, command: RedisCommand, outcome: Outcome | undefined): BatchItem {
    if (!outcome) return { error: 'ERR no reply' };
    return outcome.ok ? { reply: rewriteReply(command.rewrite, outcome.reply, session.policy.prefix) } : { error: outcome.error };
  }

  /**
   * Runs `commands` in one call of the session's runner (`run`: a pipeline or a transaction, docs/kv.md, "KV: request
   * forms"), waiting for the replica when one of them writes, a failure of the backend counted as the tenant's and
   * slow scripts killed ({@link killingSlowScripts}).
   */
  private runTogether<T>(session: KvSession, commands: RedisCommand[], run: (args: CommandArgs[], wait: KvSession['wait']) => Promise<T>): Promise<T> {
    return this.failures.call(session.tenant, () =>
      this.killingSlowScripts(
        session,
        commands.map((c) => c.label),
        run(
          commands.map((c) => c.args),
          commands.some((c) => c.write) ? session.wait : undefined,
        ),
      ),
    );
  }

  /**
   * Waits for `work`, which runs the commands `labels` name. When one of them runs a script or function that is
   * still running after REDIS_SCRIPT_TIMEOUT_MS, the server is asked to kill it (docs/kv.md, "KV: limits"), again every
   * 250 ms while it answers NOTBUSY, until `work` settles: the caller then gets Redis's own error (400), where a
   * script such as `while true do end` would otherwise leave every client of the database answered BUSY until
   * someone sent SCRIPT KILL. A script that already wrote cannot be killed (UNKILLABLE): its caller gets the
   * command timeout's 503.
   */
  private killingSlowScripts<T>(session: KvSession, labels: readonly string[], work: Promise<T>): Promise<T> {
    if (!labels.some((label) => SCRIPT_KINDS.has(label))) return work;
    return this.killingScripts(session, new Set(labels.map((label) => SCRIPT_KINDS.get(label)).filter((kind) => kind !== undefined)), work);
  }

  private async killingScripts<T>(session: KvSession, kinds: ReadonlySet<'script' | 'function'>, work: Promise<T>): Promise<T> {
    session.backend.armScriptKiller();
    let settled = false;
    const timer = setTimeout(() => void this.killScripts(session, [...kinds], () => settled), this.scriptTimeoutMs);
    try {
      return await work;
    } finally {
      settled = true;
      clearTimeout(timer);
    }
  }

  private async killScripts(session: KvSession, kinds: ReadonlyArray<'script' | 'function'>, settled: () => boolean): Promise<void> {
    while (!settled()) {
      const answers = await Promise.all(kinds.map((kind) => session.backend.killScript(kind)));
      const final = answers.find((answer) => !answer.startsWith('NOTBUSY'));
      if (final !== undefined) {
        logEvent(this.logger, 'warn', 'kv.script.killed', {
          engine: 'kv-redis',
          tenant: session.tenant,
          database: session.database.id,
          timeoutMs: this.scriptTimeoutMs,
          reply: final,
          text: 'a script ran past the timeout; asked the server to kill it',
        });
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, KILL_RETRY_MS));
    }
  }

  private count(session: KvSession, label: string): void {
    this.observer.countCommand(session.tenant, label);
  }

}

/**
 * The runner a composite command (SEARCH.*) runs on: for a write of a `durability: replicated` database, one that
 * sends `WAIT` after each of its commands (see Session.wait); otherwise the session's own.
 */
function writer(session: KvSession, write: boolean): CommandRunner {
  const { runner, wait } = session;
  if (!write || !wait) return runner;
  return {
    run: (args) => runner.run(args, wait),
    pipeline: (commands) => runner.pipeline(commands, wait),
    transaction: (commands) => runner.transaction(commands, wait),
  };
}

/** The write commands of a pipeline segment or transaction that were answered without error. */
function written(commands: readonly RedisCommand[], outcomes: ReadonlyArray<Outcome | undefined>): CommandArgs[] {
  return commands.filter((command, i) => command.write && outcomes[i]?.ok).map((command) => command.args);
}

/** Whether a command changes Redis ACL users (ACL SETUSER, ACL DELUSER): AclUsers.afterAclChanges records it. */
function changesAclUsers(command: RedisCommand): boolean {
  return command.label === 'acl|setuser' || command.label === 'acl|deluser';
}
