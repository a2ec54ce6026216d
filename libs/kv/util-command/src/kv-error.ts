/**
 * The one error model of the KV API (docs/kv.md, "KV: replies and errors"): an HTTP status and a native-looking error
 * text, sent as `{"error": "<text>"}`. Statuses: 400 client or command error, 401 authentication,
 * 405 method, 413 body over the server's hard limit, 503 backend unreachable.
 */
export class KvError extends Error {
  constructor(
    readonly status: 400 | 401 | 405 | 413 | 503,
    message: string,
  ) {
    super(message);
    this.name = 'KvError';
  }

  static badRequest(message: string): KvError {
    return new KvError(400, message);
  }
}
