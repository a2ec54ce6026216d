import type { Logger } from '@nestjs/common';
import { QueueError } from '@restash/queue/util-message';
import { RepeatLimiter } from '@restash/shared/util-http';
import type { QueueMetrics } from './queue-metrics';

/** Every request fails alike while the queue's Redis is down: one line per tenant and distinct failure per 10 s. */
const failures = new RepeatLimiter();

/**
 * Runs a request's call on the queue's Redis (docs/queue.md, "Queue: requests and errors"): a {@link QueueError}
 * (a client mistake found on the way) passes unchanged; any other failure is counted as a queue backend
 * error of the tenant, logged (`engine.call-failed`, engine `queue-redis`), and answered 503 `Service unavailable: the queue store cannot be reached`.
 * @throws QueueError
 */
export async function storeCall<T>(metrics: QueueMetrics, logger: Logger, tenant: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof QueueError) throw error;
    metrics.backendError(tenant, 'queue');
    failures.logEvent(logger, 'warn', 'engine.call-failed', { engine: 'queue-redis', tenant, error });
    throw new QueueError(503, 'Service unavailable: the queue store cannot be reached');
  }
}
