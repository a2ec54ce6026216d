import { VectorError } from './errors';
import { checkMetadata, checkWellFormed } from './limits';

/**
 * Request bodies of the Vector API (what `@upstash/vector` sends; README, "Vector: endpoints"),
 * validated into plain shapes. Every function throws {@link VectorError} 400 naming the offending
 * field; nothing is half-applied because nothing is written before validation ends.
 */

/** The largest finite float32. */
const FLOAT32_MAX = 3.4028234663852886e38;

/** Largest upsert batch, fetch by ids, topK and range page (Upstash's published limits). */
export const LIMITS = { batch: 1000, topK: 1000, fetch: 1000, page: 1000 } as const;

/** One record of an upsert (README, "Vector: records and results"), plus the SDK's `data` text. */
export interface VectorInput {
  id: string;
  vector?: number[];
  metadata?: Record<string, unknown>;
  data?: string;
}

/** Which parts of a stored vector a read returns. */
export interface Includes {
  metadata: boolean;
  vectors: boolean;
  data: boolean;
}

/** A query (README, "Vector: endpoints"): by `vector`, or by `data` to embed first. */
export interface QueryInput {
  include: Includes;
  vector?: number[];
  data?: string;
  topK: number;
  /** Upstash filter text, not parsed yet; absent or blank means no filter. */
  filter?: string;
}

export type FetchInput = { include: Includes } & ({ ids: string[]; prefix?: undefined } | { prefix: string; ids?: undefined });

export interface RangeInput {
  include: Includes;
  /** Insertion sequence number to start at (inclusive); 0 for the first page. */
  cursor: number;
  limit: number;
  prefix?: string;
}

export type DeleteInput = { ids: string[] } | { prefix: string } | { filter: string };

export interface UpdateInput {
  id: string;
  vector?: number[];
  data?: string;
  metadata?: Record<string, unknown>;
  metadataUpdateMode: 'PATCH' | 'OVERWRITE';
}

/** Resumable query start: a query plus its idle timeout in seconds (default 1 h, Upstash docs). */
export interface ResumableStartInput extends QueryInput {
  maxIdle: number;
}

/**
 * Parses a JSON request body.
 * @throws VectorError 400 for an empty or malformed body
 */
export function parseJson(body: Buffer | undefined): unknown {
  if (!body || body.length === 0) return undefined;
  try {
    return JSON.parse(body.toString('utf8'));
  } catch (error) {
    throw VectorError.badRequest(`Invalid JSON in the request body: ${(error as Error).message}`);
  }
}

/**
 * `/upsert` and `/upsert-data`: one record or an array of them.
 * @param withData true for `/upsert-data`, where every record needs `data` and no `vector`
 */
export function parseUpsert(body: unknown, withData: boolean): VectorInput[] {
  const items = Array.isArray(body) ? body : [body];
  if (items.length === 0) throw VectorError.badRequest('Nothing to upsert: the body is an empty array');
  if (items.length > LIMITS.batch) {
    throw VectorError.badRequest(`Too many vectors in one upsert: ${items.length}, at most ${LIMITS.batch}`);
  }
  return items.map((item, i) => {
    const at = Array.isArray(body) ? `[${i}]` : '';
    const record = object(item, `the upsert body${at}`);
    const out: VectorInput = { id: id(record.id, `${at}id`) };
    if (record.sparseVector !== undefined) throw VectorError.badRequest('This index does not support sparse vectors (it is a dense index)');
    if (withData) {
      if (record.vector !== undefined) throw VectorError.badRequest(`${at}vector: /upsert-data takes data, not vectors; use /upsert`);
      out.data = text(record.data, `${at}data`);
    } else {
      if (record.vector === undefined) {
        throw VectorError.badRequest(
          record.data !== undefined ? `${at}vector is missing: records with only data go to /upsert-data` : `${at}vector is missing`,
        );
      }
      out.vector = vector(record.vector, `${at}vector`);
      if (record.data !== undefined) out.data = text(record.data, `${at}data`);
    }
    if (record.metadata !== undefined) out.metadata = checkMetadata(record.metadata, `${at}metadata`);
    return out;
  });
}

/** `/query` and `/query-data`: one query, or an array of them (`queryMany`). */
export function parseQueries(body: unknown): { queries: QueryInput[]; many: boolean } {
  if (Array.isArray(body)) {
    if (body.length === 0) throw VectorError.badRequest('Nothing to query: the body is an empty array');
    if (body.length > LIMITS.batch) throw VectorError.badRequest(`Too many queries in one request: ${body.length}, at most ${LIMITS.batch}`);
    return { queries: body.map((q, i) => parseQuery(q, `[${i}]`)), many: true };
  }
  return { queries: [parseQuery(body, '')], many: false };
}

/** One query body; `at` prefixes field names in errors. */
export function parseQuery(body: unknown, at = ''): QueryInput {
  const q = object(body, `the query body${at}`);
  if (q.sparseVector !== undefined) throw VectorError.badRequest('This index does not support sparse vectors (it is a dense index)');
  const topK = integer(q.topK, `${at}topK`, 1, LIMITS.topK);
  const out: QueryInput = { topK, include: includes(q, at) };
  if (q.vector !== undefined) out.vector = vector(q.vector, `${at}vector`);
  else if (q.data !== undefined) out.data = text(q.data, `${at}data`);
  else throw VectorError.badRequest(`${at}vector is missing: a query needs a vector (or data, to query by text)`);
  if (q.filter !== undefined && q.filter !== null) {
    if (typeof q.filter !== 'string') throw VectorError.badRequest(`${at}filter must be a string`);
    checkWellFormed(q.filter, `${at}filter`);
    if (q.filter.trim() !== '') out.filter = q.filter;
  }
  return out;
}

/** `/resumable-query[-data]`: a query plus `maxIdle` seconds. */
export function parseResumableStart(body: unknown): ResumableStartInput {
  const q = parseQuery(body);
  const raw = (body as Record<string, unknown>).maxIdle;
  return { ...q, maxIdle: raw === undefined || raw === null ? 3600 : integer(raw, 'maxIdle', 1, 86_400) };
}

/** `/resumable-query-next`: `{uuid, additionalK}`. */
export function parseResumableNext(body: unknown): { uuid: string; additionalK: number } {
  const b = object(body, 'the body');
  return { uuid: text(b.uuid, 'uuid'), additionalK: integer(b.additionalK, 'additionalK', 1, LIMITS.topK) };
}

/** `/resumable-query-end`: `{uuid}`. */
export function parseResumableEnd(body: unknown): { uuid: string } {
  return { uuid: text(object(body, 'the body').uuid, 'uuid') };
}

/** `/fetch`: `{ids}` or `{prefix}`, and what to include. A bare id or array of ids is accepted too. */
export function parseFetch(body: unknown): FetchInput {
  const b = Array.isArray(body) || typeof body === 'string' || typeof body === 'number' ? { ids: body } : object(body, 'the fetch body');
  const include = includes(b, '');
  const hasIds = b.ids !== undefined && b.ids !== null;
  const hasPrefix = b.prefix !== undefined && b.prefix !== null;
  if (hasIds && hasPrefix) throw VectorError.badRequest('Only one of ids or prefix must be provided.');
  if (hasPrefix) return { prefix: text(b.prefix, 'prefix', true), include };
  if (!hasIds) throw VectorError.badRequest('ids is missing: fetch takes ids or a prefix');
  return { ids: ids(b.ids, LIMITS.fetch), include };
}

/** `/range`: `{cursor, limit, prefix?}` and what to include (README, "Vector: records and results"). */
export function parseRange(body: unknown): RangeInput {
  const b = object(body, 'the range body');
  const out: RangeInput = { cursor: cursor(b.cursor), limit: integer(b.limit, 'limit', 1, LIMITS.page), include: includes(b, '') };
  if (b.prefix !== undefined && b.prefix !== null) out.prefix = text(b.prefix, 'prefix', true);
  return out;
}

/** `/delete`: exactly one of `ids`, `prefix`, `filter`; a bare id or array is taken as ids. */
export function parseDelete(body: unknown): DeleteInput {
  if (Array.isArray(body) || typeof body === 'string' || typeof body === 'number') return { ids: ids(body, Infinity) };
  const b = object(body, 'the delete body');
  const given = (['ids', 'prefix', 'filter'] as const).filter((k) => b[k] !== undefined && b[k] !== null);
  if (given.length !== 1) throw VectorError.badRequest('Only and only one of the ids, prefix, or filter must be provided.');
  if (given[0] === 'ids') return { ids: ids(b.ids, Infinity) };
  if (given[0] === 'prefix') return { prefix: text(b.prefix, 'prefix', true) };
  const filter = text(b.filter, 'filter');
  if (filter.trim() === '') throw VectorError.badRequest('filter is empty: to delete everything, use reset');
  return { filter };
}

/** `/update`: `{id, vector?, data?, metadata?, metadataUpdateMode?}`. */
export function parseUpdate(body: unknown): UpdateInput {
  const b = object(body, 'the update body');
  if (b.sparseVector !== undefined) throw VectorError.badRequest('This index does not support sparse vectors (it is a dense index)');
  const mode = b.metadataUpdateMode ?? 'OVERWRITE';
  if (mode !== 'PATCH' && mode !== 'OVERWRITE') throw VectorError.badRequest('metadataUpdateMode must be PATCH or OVERWRITE');
  const out: UpdateInput = { id: id(b.id, 'id'), metadataUpdateMode: mode };
  if (b.vector !== undefined) out.vector = vector(b.vector, 'vector');
  if (b.data !== undefined) out.data = text(b.data, 'data');
  if (b.metadata !== undefined) out.metadata = checkMetadata(b.metadata, 'metadata');
  if (out.vector === undefined && out.data === undefined && out.metadata === undefined) {
    throw VectorError.badRequest('Nothing to update: give vector, data or metadata');
  }
  return out;
}

/**
 * The dimension rule (README, "Vector: errors"): status 422, `Invalid vector dimension: <given>, expected: <dimension>`.
 * @throws VectorError 422 when the lengths differ
 */
export function checkDimension(vector: number[], dimension: number): void {
  if (vector.length !== dimension) throw new VectorError(422, `Invalid vector dimension: ${vector.length}, expected: ${dimension}`);
}

function object(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw VectorError.badRequest(`${what} must be a JSON object`);
  return value as Record<string, unknown>;
}

function id(value: unknown, field: string): string {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value !== 'string' || value === '') throw VectorError.badRequest(`${field} must be a non-empty string or a number`);
  return checkWellFormed(value, field);
}

function ids(value: unknown, max: number): string[] {
  const list = Array.isArray(value) ? value : [value];
  if (list.length > max) throw VectorError.badRequest(`Too many ids: ${list.length}, at most ${max}`);
  return list.map((v, i) => id(v, `ids[${i}]`));
}

function text(value: unknown, field: string, allowEmpty = false): string {
  if (typeof value !== 'string' || (!allowEmpty && value === '')) throw VectorError.badRequest(`${field} must be a ${allowEmpty ? '' : 'non-empty '}string`);
  return checkWellFormed(value, field);
}

function vector(value: unknown, field: string): number[] {
  if (!Array.isArray(value) || value.length === 0) throw VectorError.badRequest(`${field} must be a non-empty array of numbers`);
  for (let i = 0; i < value.length; i++) {
    const x: unknown = value[i];
    if (typeof x !== 'number' || !Number.isFinite(x)) throw VectorError.badRequest(`${field}[${i}] must be a finite number`);
    // Vectors are stored as float32: a larger magnitude would become Infinity in the engine.
    if (Math.abs(x) > FLOAT32_MAX) throw VectorError.badRequest(`${field}[${i}] is outside the float32 range`);
  }
  return value as number[];
}

function integer(value: unknown, field: string, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isInteger(value)) throw VectorError.badRequest(`${field} must be an integer`);
  if (value < min || value > max) throw VectorError.badRequest(`${field} must be between ${min} and ${max}, got ${value}`);
  return value;
}

function bool(value: unknown, field: string): boolean {
  if (value === undefined || value === null) return false;
  if (typeof value !== 'boolean') throw VectorError.badRequest(`${field} must be true or false`);
  return value;
}

function includes(b: Record<string, unknown>, at: string): Includes {
  return {
    metadata: bool(b.includeMetadata, `${at}includeMetadata`),
    vectors: bool(b.includeVectors, `${at}includeVectors`),
    data: bool(b.includeData, `${at}includeData`),
  };
}

/** A range cursor: "0", 0 or "" start; otherwise the decimal insertion number `nextCursor` gave. */
function cursor(value: unknown): number {
  if (value === undefined || value === null || value === '') return 0;
  const n = typeof value === 'number' ? value : typeof value === 'string' && /^\d{1,15}$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < 0) throw VectorError.badRequest(`cursor must be "0" or a nextCursor this index returned, got ${JSON.stringify(value)}`);
  return n;
}
