import { VectorError } from '../errors';

/**
 * The VectorError `run` throws, for tests that check a refusal's status and text.
 * @throws Error when `run` throws nothing, or something other than a VectorError (rethrown)
 */
export function vectorErrorOf(run: () => unknown): VectorError {
  try {
    run();
  } catch (e) {
    if (e instanceof VectorError) return e;
    throw e;
  }
  throw new Error('expected a VectorError');
}
