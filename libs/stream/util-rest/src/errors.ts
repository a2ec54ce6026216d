import { ApiError } from '@restash/shared/util-errors';

/**
 * An error of the Stream REST API, answered as `{error, status}` with that HTTP status
 * (docs/stream.md, "Stream: errors"). The official SDK throws `UpstashError(body.error)`, so `message` is what users
 * read.
 */
export class StreamError extends ApiError {}

/** The spec's error body: `{"error": <string>, "status": <integer>}`. */
export function encodeError(status: number, message: string): string {
  return JSON.stringify({ error: message, status });
}

/** The spec's Success record, answered by commit and delete-consumer. */
export const SUCCESS_JSON = JSON.stringify({ result: 'Success', status: 200 });
