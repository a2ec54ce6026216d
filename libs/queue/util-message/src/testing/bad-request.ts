import { QueueError } from '../errors';

/** For tests: runs `run`, expects a QueueError 400, and returns its message. */
export function badRequest(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(QueueError);
    expect((error as QueueError).status).toBe(400);
    return (error as QueueError).message;
  }
  throw new Error('expected a 400');
}
