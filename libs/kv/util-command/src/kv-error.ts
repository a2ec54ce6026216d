import { ApiError } from '@restash/shared/util-errors';

/**
 * The one error model of the KV API (docs/kv.md, "KV: replies and errors"): an HTTP status and a native-looking error
 * text, sent as `{"error": "<text>"}`. Statuses: 400 client or command error, 401 authentication,
 * 405 method, 413 body over the server's hard limit, 503 backend unreachable.
 */
export class KvError extends ApiError {
  declare readonly status: 400 | 401 | 405 | 413 | 503;

  constructor(status: 400 | 401 | 405 | 413 | 503, message: string) {
    super(status, message);
  }
}
