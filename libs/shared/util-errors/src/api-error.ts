/**
 * The one error model of the APIs (docs/architecture.md, "Architecture: error shapes"): an error a request is
 * answered with, carrying its HTTP status; the message is what the official SDK shows its user. Each API's error
 * extends it (KvError, VectorError, StreamError, QueueError) and its tenant API (registerTenantApi's
 * TenantApiErrors) writes the body in the API's own shape: `{"error"}` for KV and QStash, `{"error", "status"}` for
 * Vector and Kafka REST. Anything else a request throws is a bug, answered 500.
 */
export class ApiError extends Error {
  /**
   * @param status the HTTP status of the answer (4xx for the client's mistakes, 5xx for an engine's failure)
   * @param message the answer's error text, in the API's words
   */
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = new.target.name;
  }

  /** 400: the request is malformed or breaks a rule of the API, as the subclass it is called on. */
  static badRequest<T extends ApiError>(this: new (status: 400, message: string) => T, message: string): T {
    return new this(400, message);
  }
}

/**
 * The error a promise rejects with, for tests that assert an API's answer (status, message).
 * @param type the error class expected (an ApiError subclass, or Error for anything thrown)
 * @throws Error when the promise resolves, or rejects with something that is not a `type`
 */
export async function rejectionOf<E extends Error>(promise: Promise<unknown>, type: abstract new (...args: never[]) => E): Promise<E> {
  const outcome = await promise.then(
    (value: unknown) => ({ resolved: value }),
    (error: unknown) => ({ error }),
  );
  if (!('error' in outcome)) throw new Error(`expected a ${type.name}, but it resolved`);
  if (!(outcome.error instanceof type)) throw new Error(`expected a ${type.name}, got ${String(outcome.error)}`);
  return outcome.error;
}

/**
 * The error a call throws, for tests that assert an API's answer (status, message): the synchronous twin of
 * {@link rejectionOf}.
 * @param type the error class expected (an ApiError subclass, or Error for anything thrown)
 * @throws Error when the call returns, or throws something that is not a `type`
 */
export function errorOf<E extends Error>(run: () => unknown, type: abstract new (...args: never[]) => E): E {
  try {
    run();
  } catch (error) {
    if (error instanceof type) return error;
    throw new Error(`expected a ${type.name}, got ${String(error)}`);
  }
  throw new Error(`expected a ${type.name}, but it returned`);
}
