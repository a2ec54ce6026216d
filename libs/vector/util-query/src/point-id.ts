import { createHash } from 'node:crypto';

/**
 * The Qdrant point id of a vector: Qdrant takes only unsigned integers and UUIDs, while Upstash ids
 * are any string, unique per namespace (DESIGN.md, Vector). The id is a UUID (version 8, RFC 9562
 * custom) made of the first 128 bits of SHA-256 over `namespace NUL id`, so that every gateway
 * replica maps a vector to the same point without a lookup.
 */
export function pointId(namespace: string, id: string): string {
  const bytes = createHash('sha256').update(namespace).update('\0').update(id).digest();
  bytes[6] = ((bytes[6] as number) & 0x0f) | 0x80;
  bytes[8] = ((bytes[8] as number) & 0x3f) | 0x80;
  const hex = bytes.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}
