/** Thrown by an attempt that will be retried: {@link retryLaterBackoff} waits `delayMs` before the next one. */
export class RetryLater extends Error {
  constructor(
    readonly delayMs: number,
    reason: string,
  ) {
    super(reason);
    this.name = 'RetryLater';
  }
}

/** BullMQ's backoff strategy of the deliveries: the delay a {@link RetryLater} carries, else 0. */
export function retryLaterBackoff(_attemptsMade: number, _type: string | undefined, error: Error | undefined): number {
  return error instanceof RetryLater ? error.delayMs : 0;
}

/** A message whose registry or store calls failed through their in-place retries comes back this much later, in ms. */
export const REQUEUE_DELAY_MS = 10_000;

/** While a queue's message waits for its retry in place, a cancel of it (or its queue's or project's deletion) is looked for this often, in ms. */
export const HOLD_CANCEL_CHECK_MS = 1_000;

/** The first pause while a queue's message waits for its callbacks, in ms; it doubles up to {@link HOLD_CANCEL_CHECK_MS}. */
export const CALLBACK_CHECK_FIRST_MS = 10;

/** The tenant of a queue project id (`<tenant>.<project>`, queueProjectId). */
export function tenantOfProject(project: string): string {
  return project.slice(0, Math.max(0, project.indexOf('.')));
}
