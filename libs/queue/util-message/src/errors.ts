import { ApiError } from '@restash/shared/util-errors';

/**
 * An error of the queue (QStash) API, answered with that HTTP status and the body
 * {@link encodeQueueError}. The official SDK throws `QstashError(<raw body text>, status)`
 * (docs/queue.md, "Queue: requests and errors"), so `message` is what users read.
 */
export class QueueError extends ApiError {}

/** QStash's error body: `{"error": <message>}` (docs/queue.md, "Queue: requests and errors"). */
export function encodeQueueError(message: string): string {
  return JSON.stringify({ error: message });
}
