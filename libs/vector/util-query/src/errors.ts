import { ApiError } from '@restash/shared/util-errors';

/**
 * An error of the Vector API, answered as `{error, status}` with that HTTP status (docs/vector.md,
 * "Vector: errors"). The official SDK throws `UpstashError(body.error)`, so `message` is what users
 * read.
 */
export class VectorError extends ApiError {}

/** The Vector API's error body: `{"error": <string>, "status": <integer>}` (docs/vector.md, "Vector: errors"). */
export function encodeError(status: number, message: string): string {
  return JSON.stringify({ error: message, status });
}
