import { ApiException } from '@kubernetes/client-node';

/** The HTTP status of a failed Kubernetes API call (`ApiException.code`, or a watch's `statusCode`), if any. */
export function apiStatusCode(error: unknown): number | undefined {
  if (error instanceof ApiException) return error.code;
  if (typeof error === 'object' && error !== null) {
    const { code, statusCode } = error as { code?: unknown; statusCode?: unknown };
    if (typeof statusCode === 'number') return statusCode;
    if (typeof code === 'number') return code;
  }
  return undefined;
}

/** 404: the object (or its kind) does not exist. */
export function isNotFound(error: unknown): boolean {
  return apiStatusCode(error) === 404;
}

/** 409: a resourceVersion precondition failed, or the object already exists (re-read and retry). */
export function isConflict(error: unknown): boolean {
  return apiStatusCode(error) === 409;
}

/**
 * A one-line description of a failed call for logs, Events and condition messages: the API
 * server's `Status.message` with the status code (`409: Operation cannot be fulfilled …`) instead of
 * client-node's multi-line text with the response headers; other errors give their message.
 */
export function kubernetesErrorMessage(error: unknown): string {
  if (error instanceof ApiException) {
    const body = error.body as { message?: unknown } | string | undefined;
    const text = typeof body === 'object' && body !== null && typeof body.message === 'string' ? body.message : typeof body === 'string' ? body : '';
    return `${error.code}: ${text || 'request failed'}`;
  }
  return error instanceof Error ? error.message : String(error);
}
