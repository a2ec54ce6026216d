import { Command, ReplyError } from 'ioredis';
import type { CommandArgs, Reply } from '@restash/kv/util-command';

/**
 * An ioredis command that hands back the reply exactly as Redis sent it (RESP2): bulk and status
 * strings as Buffers, no per-command reshaping. ioredis reshapes some replies by command name
 * (HGETALL into an object, ZRANGE … WITHSCORES into pairs), which would break the RESP2 shapes the
 * REST API promises (README, "KV: replies and errors"), so its reply transformers are bypassed here.
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
