import { VectorError } from './errors';

/**
 * Limits on what a vector may carry, checked before anything reaches the engine (docs/vector.md, "Vector: limits").
 *
 * - `metadataDepth`: objects and arrays nested at most this deep (`{}` is 1). Qdrant's storage reads
 *   payloads back with serde_json's recursion limit of 128, which also counts the WAL entry around
 *   the payload: qdrant-local accepts metadata 124 levels deep and then cannot load the collection
 *   again. 32 leaves a wide margin.
 * - `metadataBytes`: the metadata's JSON at most this many UTF-8 bytes, Upstash's published
 *   per-vector metadata limit (48 KB).
 */
export const METADATA_LIMITS = { depth: 32, bytes: 48 * 1024 } as const;

/** With the `u` flag a surrogate pair is one code point, so only a lone surrogate is in class Cs (String.prototype.isWellFormed, without ES2024 typings). */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Checks that a string is well-formed UTF-16 (no lone surrogate): such a string has no UTF-8 form,
 * so neither the engine nor the embedder can store or read it.
 * @throws VectorError 400 naming `field`
 */
export function checkWellFormed(value: string, field: string): string {
  if (LONE_SURROGATE.test(value)) throw VectorError.badRequest(`${field} contains a lone UTF-16 surrogate, which is not valid Unicode text`);
  return value;
}

/**
 * Validates a metadata object against {@link METADATA_LIMITS} and for well-formed strings (keys and
 * values), walking it iteratively (no recursion, whatever the input's depth). Use it on every
 * metadata that is about to be stored: upserted, overwritten, or the result of a merge patch.
 * @param field how errors name the value, e.g. `metadata` or `[3]metadata`
 * @throws VectorError 400 naming the field and the limit
 */
export function checkMetadata(value: unknown, field: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw VectorError.badRequest(`${field} must be a JSON object`);
  const stack: Array<{ node: unknown; depth: number }> = [{ node: value, depth: 1 }];
  while (stack.length > 0) {
    const { node, depth } = stack.pop() as { node: unknown; depth: number };
    if (depth > METADATA_LIMITS.depth) {
      throw VectorError.badRequest(`${field} is nested too deeply: at most ${METADATA_LIMITS.depth} levels of objects and arrays`);
    }
    const entries = Array.isArray(node) ? node.map((v) => ['', v] as const) : Object.entries(node as Record<string, unknown>);
    for (const [key, child] of entries) {
      checkWellFormed(key, `${field} (a key)`);
      if (typeof child === 'string') checkWellFormed(child, `${field} (a string value)`);
      else if (typeof child === 'object' && child !== null) stack.push({ node: child, depth: depth + 1 });
    }
  }
  const bytes = Buffer.byteLength(JSON.stringify(value), 'utf8');
  if (bytes > METADATA_LIMITS.bytes) {
    throw VectorError.badRequest(`${field} is too large: ${bytes} bytes of JSON, at most ${METADATA_LIMITS.bytes}`);
  }
  return value as Record<string, unknown>;
}

/**
 * Validates a namespace (from the path): well-formed text without NUL (NUL is refused so that no
 * encoding of namespace and id can ever be ambiguous, and Upstash namespaces are plain names).
 * @throws VectorError 400 naming the namespace
 */
export function checkNamespace(namespace: string, field = 'namespace'): string {
  checkWellFormed(namespace, field);
  if (namespace.includes('\0')) throw VectorError.badRequest(`${field} must not contain the NUL character`);
  return namespace;
}
