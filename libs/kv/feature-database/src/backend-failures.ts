import { Logger } from '@nestjs/common';
import { NotReplicatedError } from '@restash/kv/data-access-redis';
import { KvError } from '@restash/kv/util-command';
import { RepeatLimiter } from '@restash/shared/util-http';
import type { KvObserver } from './ports';

/** Which Redis a failed call was on. */
export type KvEngine = 'kv-redis' | 'control-redis';

/**
 * The KV API's one wrapper around Redis (docs/operations.md, "When an engine fails"): what a call on a tenant's
 * Redis (or the control Redis) throws becomes 503 in the API's shape, `ERR the database is unavailable, retry
 * later`, or Redis's own NOREPLICAS text for a write no replica acknowledged; each is counted and logged, a
 * failure repeating alike once per 10 s. KvErrors pass through.
 */
export class KvBackendFailures {
  private readonly logger = new Logger('KvCommands');
  /** Failures that every request of a database meets alike are logged once per 10 s. */
  readonly repeats = new RepeatLimiter();

  constructor(private readonly observer: KvObserver) {}

  /** Runs a call on a tenant's Redis (or, for `engine` control-redis, the control Redis). @throws KvError what {@link failure} makes of its error */
  async call<T>(tenant: string, call: () => Promise<T>, engine: KvEngine = 'kv-redis'): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw this.failure(tenant, error, engine);
    }
  }

  /** The KvError a failed Redis call answers: itself when it is one, 503 otherwise. */
  failure(tenant: string, error: unknown, engine: KvEngine = 'kv-redis'): KvError {
    if (error instanceof KvError) return error;
    if (error instanceof NotReplicatedError) {
      // Redis's own error for it (NOREPLICAS), with 503: the write ran on the primary and may be lost on a failover.
      this.observer.backendError(tenant, 'replication');
      this.repeats.logEvent(this.logger, 'warn', 'kv.write.not-replicated', { engine, tenant, acknowledged: error.acknowledged, text: error.message });
      return new KvError(503, error.message);
    }
    this.observer.backendError(tenant, 'connection');
    this.repeats.logEvent(this.logger, 'warn', 'engine.call-failed', { engine, tenant, error });
    // The cause stays in the log: the client library's words are not the API's.
    return new KvError(503, 'ERR the database is unavailable, retry later');
  }
}
