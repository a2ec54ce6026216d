import { Logger } from '@nestjs/common';
import { logEvent } from '@restash/shared/util-http';
import { type InfrastructureOperation, type InfrastructureRetryPolicy, retryInfrastructure } from './infrastructure-retry';
import type { DeliveryClock, DeliveryObserver } from './ports';

/**
 * Delivery's one wrapper around its infrastructure (docs/queue.md, "Queue: at-least-once delivery"; docs/operations.md,
 * "When an engine fails"): a call on the registry (control Redis) or the store (queue Redis) is retried in place
 * ({@link retryInfrastructure} under the policy given), each retry logged (`engine.call-failed`) and counted, so that
 * an outage does not spend one of the message's attempts.
 */
export class InfrastructureCalls {
  /** Logged as the processor's, as before the logic left the app. */
  private readonly logger = new Logger('DeliveryProcessor');

  constructor(
    private readonly observer: DeliveryObserver,
    private readonly policy: InfrastructureRetryPolicy,
    private readonly clock: DeliveryClock,
  ) {}

  /** An infrastructure call, retried in place (logged, counted). @throws InfrastructureUnavailable after the last retry */
  call<T>(operation: InfrastructureOperation, call: () => Promise<T>): Promise<T> {
    return retryInfrastructure(
      operation,
      call,
      (error, retry, delayMs) => {
        this.observer.countInfrastructureRetry(operation);
        logEvent(this.logger, 'warn', 'engine.call-failed', {
          engine: operation === 'registry' ? 'control-redis' : 'queue-redis',
          call: operation,
          error,
          retry,
          retryInMs: delayMs,
          budgetMs: this.policy.budgetMs,
        });
      },
      this.policy,
      this.clock,
    );
  }
}
