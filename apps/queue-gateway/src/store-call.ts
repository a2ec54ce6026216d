import type { Logger } from '@nestjs/common';
import { QueueError } from '@restash/queue/util-message';
import type { QueueMetrics } from './queue-metrics';

/**
 * Runs a request's call on the queue's Redis (README, "Queue: requests and errors"): a {@link QueueError}
 * (a client mistake found on the way) passes unchanged; any other failure is counted as a queue backend
 * error of the tenant, logged, and answered 503 `Service unavailable: the queue store cannot be reached`.
 * @throws QueueError
 */
export async function storeCall<T>(metrics: QueueMetrics, logger: Logger, tenant: string, call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof QueueError) throw error;
    metrics.backendError(tenant, 'queue');
    logger.warn(`queue Redis call failed: ${String(error)}`);
    throw new QueueError(503, 'Service unavailable: the queue store cannot be reached');
  }
}
