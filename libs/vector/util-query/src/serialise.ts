import { float32ArrayJson, float32String } from './numbers';
import type { Includes } from './requests';
import type { SparseVector } from './sparse';

/** A vector as read back, before it is printed. */
export interface VectorView {
  id: string;
  vector?: number[];
  sparseVector?: SparseVector;
  metadata?: Record<string, unknown>;
  data?: string;
  /** An Upstash Search document's content (printed for `includeData`, in place of `data`). */
  content?: Record<string, unknown>;
}

/**
 * One fetched, ranged or queried vector as JSON: `id`, then `score` when given, then only the parts
 * the request asked for and the vector has (absent parts are omitted, never null: the SDK's tests
 * compare with toEqual, docs/vector.md, "Vector: records and results"). Numbers print as float32 (float32String).
 * An Upstash Search document prints its `content` where other vectors print `data`.
 */
export function vectorJson(v: VectorView, include: Includes, score?: number): string {
  let out = `{"id":${JSON.stringify(v.id)}`;
  if (score !== undefined) out += `,"score":${float32String(score)}`;
  if (include.vectors && v.vector) out += `,"vector":${float32ArrayJson(v.vector)}`;
  if (include.vectors && v.sparseVector) {
    out += `,"sparseVector":{"indices":${JSON.stringify(v.sparseVector.indices)},"values":${float32ArrayJson(v.sparseVector.values)}}`;
  }
  if (include.metadata && v.metadata !== undefined) out += `,"metadata":${JSON.stringify(v.metadata)}`;
  if (include.data && v.content !== undefined) out += `,"content":${JSON.stringify(v.content)}`;
  else if (include.data && v.data !== undefined) out += `,"data":${JSON.stringify(v.data)}`;
  return `${out}}`;
}

/** The Vector API's success body, `{"result": <json>}` (docs/vector.md, "Vector: requests"), around an already-encoded JSON value. */
export function resultJson(json: string): string {
  return `{"result":${json}}`;
}
