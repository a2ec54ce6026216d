import { Command, ReplyError } from 'ioredis';
import type { CommandArgs, Reply } from '@restash/kv/util-command';

/**
 * An ioredis command that hands back the reply exactly as Redis sent it (RESP2): bulk and status
 * strings as Buffers, no per-command reshaping. ioredis reshapes some replies by command name
 * (HGETALL into an object, ZRANGE … WITHSCORES into pairs), which would break the RESP2 shapes the
 * REST API promises (docs/kv.md, "KV: replies and errors"), so its reply transformers are bypassed here.
 */
export class RawCommand extends Command {
  constructor(args: CommandArgs) {
    super(String(args[0]), args.slice(1), { replyEncoding: null });
  }

  override transformReply(result: Buffer | Buffer[]): Buffer | Buffer[] {
    return result;
  }

  /** The reply as {@link Reply}. */
  reply(): Promise<Reply> {
    return this.promise as Promise<Reply>;
  }
}

/**
 * A reply larger than the database's `maxRequestBytes`, which Upstash applies to replies too ("ERR max
 * request size exceeded" for a whole list loaded in one request). It is not read to its end: the
 * connection it came on is closed (see KvBackend), so the gateway never holds more than about the limit.
 */
export class ReplyTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`ERR max request size exceeded. Limit: ${limit} bytes, Actual: a reply of more than ${limit} bytes`);
    this.name = 'ReplyTooLarge';
  }
}

/**
 * True for an error reply of Redis itself (a command failure) and for a {@link ReplyTooLarge} (the
 * tenant's own data), false for connection or client errors.
 */
export function isReplyError(error: unknown): error is Error {
  return error instanceof (ReplyError as new () => Error) || error instanceof ReplyTooLarge;
}

/**
 * What a write of a database with `durability: replicated` waits for (docs/operations.md, "KV databases: durability"): Redis's
 * `WAIT <replicas> <timeoutMs>`, sent on the write's own connection right after it (one socket write), which returns
 * once that many replicas acknowledged every write sent on that connection before it, or the timeout passed.
 */
export interface ReplicaWait {
  /** Replicas that must acknowledge, at least 1. */
  replicas: number;
  /** How long Redis waits for them, in milliseconds (at least 1: WAIT's 0 would wait forever). */
  timeoutMs: number;
}

/**
 * A write ran on the primary but fewer than {@link ReplicaWait.replicas} replicas acknowledged it within the timeout:
 * the gateway answers 503 with Redis's own error for it (`NOREPLICAS`), since the write may be lost on a failover.
 */
export class NotReplicatedError extends Error {
  constructor(
    readonly wait: ReplicaWait,
    readonly acknowledged: number,
    /** Why WAIT itself failed, when it did. */
    readonly waitError?: string,
  ) {
    super(
      waitError === undefined
        ? `NOREPLICAS Not enough good replicas to write: the write ran on the primary but ${acknowledged} of ${wait.replicas} replica(s) ` +
            `acknowledged it within ${wait.timeoutMs} ms; it may be lost on a failover (durability: replicated)`
        : `NOREPLICAS Not enough good replicas to write: no replica's acknowledgement could be read (${waitError}); the write may be lost on a failover (durability: replicated)`,
    );
    this.name = 'NotReplicatedError';
  }
}

/**
 * Awaits the reply of the `WAIT` that followed a write and checks it against `wait`. An error reply (a server that is
 * a replica now, an ACL user without `+wait`) or a lost connection counts as no replica acknowledging.
 * @throws NotReplicatedError when too few replicas acknowledged
 */
export async function awaitReplicas(wait: ReplicaWait, reply: Promise<Reply>): Promise<void> {
  let acknowledged: number;
  try {
    const answer = await reply;
    acknowledged = Number(Buffer.isBuffer(answer) ? answer.toString() : answer);
  } catch (error) {
    throw new NotReplicatedError(wait, 0, error instanceof Error ? error.message : String(error));
  }
  if (!(acknowledged >= wait.replicas)) throw new NotReplicatedError(wait, Number.isFinite(acknowledged) ? acknowledged : 0);
}

/**
 * An error reply that says the server is a replica now (`READONLY You can't write against a read only replica.`): the
 * database's primary was demoted (a failover) while the command was on its way. Not the tenant's mistake: the gateway
 * answers 503, and the client's retry reaches the new primary (KvBackend's Sentinel connections reconnect on it).
 */
export class ServerDemotedError extends Error {
  constructor(readonly reply: string) {
    super(`the server answered as a replica: ${reply}`);
    this.name = 'ServerDemotedError';
  }
}

/** Whether an error reply's text is Redis's READONLY (see {@link ServerDemotedError}). */
export function isDemotedReply(text: string): boolean {
  return text.startsWith('READONLY ');
}
