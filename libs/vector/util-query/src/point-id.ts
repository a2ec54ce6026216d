import { createHash } from 'node:crypto';

/**
 * The Qdrant point id of a vector: Qdrant takes only unsigned integers and UUIDs, while Upstash ids
 * are any string, unique per namespace (docs/vector.md, "Vector: storage in Qdrant"). The id is a UUID (version 8, RFC 9562
 * custom) made of the first 128 bits of SHA-256 over `<UTF-8 byte length of namespace, decimal>:`
 * `<namespace><id>`: the length prefix makes the encoding unambiguous (no two (namespace, id) pairs
 * hash the same input), so every gateway replica maps a vector to the same point without a lookup.
 *
 * Versions before this encoding hashed `namespace NUL id`; points they wrote are not found under the
 * new ids (docs/vector.md, "Vector: migration").
 */
export function pointId(namespace: string, id: string): string {
  const bytes = createHash('sha256').update(`${Buffer.byteLength(namespace, 'utf8')}:`).update(namespace).update(id).digest();
  bytes[6] = ((bytes[6] as number) & 0x0f) | 0x80;
  bytes[8] = ((bytes[8] as number) & 0x3f) | 0x80;
  const hex = bytes.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20, 32)}`;
}
