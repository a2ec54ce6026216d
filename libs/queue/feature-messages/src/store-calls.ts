import { Logger } from '@nestjs/common';
import { RepeatLimiter } from '@restash/shared/util-http';
import { QueueError } from '@restash/queue/util-message';
import type { ProjectScope, QueueObserver } from './ports';

/** Every request fails alike while the queue's Redis is down: one line per tenant and distinct failure per 10 s. */
const failures = new RepeatLimiter();

/**
 * The queue API's one wrapper around its store (docs/queue.md, "Queue: requests and errors"; docs/operations.md, "When
 * an engine fails"): a {@link QueueError} (a client mistake found on the way) passes unchanged; any other failure is
 * counted as a queue backend error of the tenant, logged (`engine.call-failed`, engine `queue-redis`, under the
 * service's name), and answered 503 `Service unavailable: the queue store cannot be reached`.
 */
export class StoreCalls {
  private readonly logger: Logger;

  /** @param service the name the failures are logged under (the service's) */
  constructor(
    private readonly observer: Pick<QueueObserver, 'backendError'>,
    service: string,
  ) {
    this.logger = new Logger(service);
  }

  /** Runs a request's call on the queue's Redis. @throws QueueError, 503 for any other failure */
  async call<T>(tenant: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      if (error instanceof QueueError) throw error;
      this.observer.backendError(tenant, 'queue');
      failures.logEvent(this.logger, 'warn', 'engine.call-failed', { engine: 'queue-redis', tenant, error });
      throw new QueueError(503, 'Service unavailable: the queue store cannot be reached');
    }
  }
}

/**
 * The base of the queue API's services that call the store (docs/queue.md, "Queue: requests and errors"): what a
 * service is built from (`deps`, with the observer its failures are counted on) and {@link StoreService.backend},
 * which runs a request's call through one {@link StoreCalls} logged under the service's name.
 */
export abstract class StoreService<Deps extends { observer: Pick<QueueObserver, 'backendError'> }> {
  private readonly calls: StoreCalls;

  /** @param service the name the failures are logged under */
  protected constructor(
    protected readonly deps: Deps,
    service: string,
  ) {
    this.calls = new StoreCalls(deps.observer, service);
  }

  /** Runs a call of the session's request on the queue's Redis. @throws QueueError, 503 for any backend failure */
  protected backend<T>(session: ProjectScope, call: () => Promise<T>): Promise<T> {
    return this.calls.call(session.tenant, call);
  }
}
