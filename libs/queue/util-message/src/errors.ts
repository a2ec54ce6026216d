/**
 * An error of the queue (QStash) API, answered with that HTTP status and the body
 * {@link encodeQueueError}. The official SDK throws `QstashError(<raw body text>, status)`
 * (docs/queue.md, "Queue: requests and errors"), so `message` is what users read.
 */
export class QueueError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'QueueError';
  }

  /** 400: a malformed request, header or argument. */
  static badRequest(message: string): QueueError {
    return new QueueError(400, message);
  }
}

/** QStash's error body: `{"error": <message>}` (docs/queue.md, "Queue: requests and errors"). */
export function encodeQueueError(message: string): string {
  return JSON.stringify({ error: message });
}
