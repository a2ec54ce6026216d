import type { Redis } from 'ioredis';
import type { CommandArgs, Reply } from '@restash/kv/util-command';
import { type CommandRunner, type Outcome, type TransactionOutcome, runOne, runPipeline, runTransaction, send } from './command-runner';
import type { ReplicaWait } from './raw-command';

/* The connections KvBackend does not share: one per Redis ACL user, and the pool transactions borrow from. */

/** How long a retired ACL user's connection ({@link KvBackend.dropUser}) still serves the requests that hold it, in ms. */
export const RETIRED_USER_GRACE_MS = 2_000;

/**
 * One connection authenticated as a Redis ACL user. A batch's commands are written in one
 * synchronous run (runPipeline), so a MULTI … EXEC sent on it never interleaves with another
 * request's commands.
 */
export class UserConnection implements CommandRunner {
  private idleTimer: NodeJS.Timeout | undefined;
  private retired = false;

  private constructor(
    private readonly client: Redis,
    private readonly idleTimeoutMs: number,
  ) {}

  static async open(client: Redis, username: string, password: string, idleTimeoutMs: number, onClose: () => void): Promise<UserConnection> {
    client.once('end', onClose);
    try {
      await client.connect();
      await client.auth(username, password);
    } catch (error) {
      client.disconnect();
      throw error;
    }
    const connection = new UserConnection(client, idleTimeoutMs);
    connection.touch();
    return connection;
  }

  private touch(): void {
    if (this.retired) return;
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.close(), this.idleTimeoutMs);
    this.idleTimer.unref();
  }

  run(args: CommandArgs, wait?: ReplicaWait): Promise<Reply> {
    this.touch();
    return wait ? runOne(this.client, args, wait) : send(this.client, args);
  }

  pipeline(commands: CommandArgs[], wait?: ReplicaWait): Promise<Outcome[]> {
    this.touch();
    return runPipeline(this.client, commands, wait);
  }

  transaction(commands: CommandArgs[], wait?: ReplicaWait): Promise<TransactionOutcome> {
    this.touch();
    return runTransaction(this.client, commands, wait);
  }

  close(): void {
    clearTimeout(this.idleTimer);
    this.client.disconnect();
  }

  /** Closes the connection after {@link RETIRED_USER_GRACE_MS}, whatever it runs meanwhile. */
  retire(): void {
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => this.client.disconnect(), RETIRED_USER_GRACE_MS);
    this.idleTimer.unref();
    this.retired = true;
  }
}

/**
 * Connections lent to one borrower at a time (transactions): at most `max` at once, later
 * borrowers wait; idle ones are reused, and closed after `idleTimeoutMs`. A connection that fails
 * during use is closed, and a failed connect fails the borrower at once. (generic-pool 3.9 was
 * tried first: when its factory fails, it re-dispenses in a loop and acquire() never settles
 * without a timeout, lib/Pool.js `_createResource`, so a Redis outage hung /multi-exec.)
 */
export class DedicatedConnections {
  private readonly idle: Array<{ client: Redis; timer: NodeJS.Timeout }> = [];
  private readonly waiting: Array<() => void> = [];
  private borrowed = 0;

  constructor(
    private readonly open: () => Promise<Redis>,
    private readonly max: number,
    private readonly idleTimeoutMs: number,
  ) {}

  get borrowedCount(): number {
    return this.borrowed;
  }

  get idleCount(): number {
    return this.idle.length;
  }

  /** Runs `work` on a connection nobody else uses meanwhile. */
  async use<T>(work: (client: Redis) => Promise<T>): Promise<T> {
    while (this.borrowed >= this.max) await new Promise<void>((resolve) => this.waiting.push(resolve));
    this.borrowed++;
    let client: Redis | undefined;
    try {
      client = this.takeIdle() ?? (await this.open());
      const result = await work(client);
      this.putIdle(client);
      return result;
    } catch (error) {
      client?.disconnect();
      throw error;
    } finally {
      this.borrowed--;
      this.waiting.shift()?.();
    }
  }

  close(): void {
    for (const { client, timer } of this.idle.splice(0)) {
      clearTimeout(timer);
      client.disconnect();
    }
  }

  private takeIdle(): Redis | undefined {
    for (let entry = this.idle.pop(); entry; entry = this.idle.pop()) {
      clearTimeout(entry.timer);
      if (entry.client.status === 'ready') return entry.client;
      entry.client.disconnect();
    }
    return undefined;
  }

  private putIdle(client: Redis): void {
    const entry = {
      client,
      timer: setTimeout(() => {
        const at = this.idle.indexOf(entry);
        if (at >= 0) this.idle.splice(at, 1);
        client.disconnect();
      }, this.idleTimeoutMs),
    };
    entry.timer.unref();
    this.idle.push(entry);
  }
}
