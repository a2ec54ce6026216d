import { QueueError } from '../errors';

/**
 * For tests: the QueueError `run` throws (docs/queue.md, "Queue: requests and errors"), to check a refusal's status
 * and text.
 * @throws Error when `run` throws nothing; rethrows anything that is not a QueueError
 */
export function refusal(run: () => unknown): QueueError {
  try {
    run();
  } catch (error) {
    if (error instanceof QueueError) return error;
    throw error;
  }
  throw new Error('expected a QueueError');
}

/** For tests: runs `run`, expects a QueueError 400 ({@link refusal}), and returns its message. */
export function badRequest(run: () => unknown): string {
  const error = refusal(run);
  expect(error.status).toBe(400);
  return error.message;
}
