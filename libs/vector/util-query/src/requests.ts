import { VectorError } from './errors';
import { FUSION_ALGORITHMS, type FusionAlgorithm } from './fusion';
import { checkMetadata, checkNamespace, checkWellFormed } from './limits';
import { float32Problem } from './numbers';
import { type SparseVector, parseSparseVector } from './sparse';

/**
 * Request bodies of the Vector API (what `@upstash/vector` sends; docs/vector.md, "Vector: endpoints"),
 * validated into plain shapes. Every function throws {@link VectorError} 400 naming the offending
 * field; nothing is half-applied because nothing is written before validation ends.
 */

/** Upstash's index types (docs/vector.md, "Vector: index types"): dense vectors, sparse vectors, or both on every vector. */
export const INDEX_TYPES = ['DENSE', 'SPARSE', 'HYBRID'] as const;
export type IndexType = (typeof INDEX_TYPES)[number];

/** Which side(s) of a hybrid index a query searches (the SDK's `QueryMode`); HYBRID is the default. */
export const QUERY_MODES = ['HYBRID', 'DENSE', 'SPARSE'] as const;
export type QueryMode = (typeof QUERY_MODES)[number];

/** Largest upsert batch, fetch by ids, topK and range page (Upstash's published limits). */
export const LIMITS = { batch: 1000, topK: 1000, fetch: 1000, page: 1000 } as const;

/** One record of an upsert (docs/vector.md, "Vector: records and results"), plus the SDK's `data` text. */
export interface VectorInput {
  id: string;
  vector?: number[];
  sparseVector?: SparseVector;
  metadata?: Record<string, unknown>;
  data?: string;
  /**
   * An Upstash Search document's `content` (docs/vector.md, "Vector: Upstash Search"): stored in place of `data`,
   * which then holds the text that is embedded ({@link documentText}) and is not stored.
   */
  content?: Record<string, unknown>;
}

/** Which parts of a stored vector a read returns. */
export interface Includes {
  metadata: boolean;
  vectors: boolean;
  data: boolean;
}

/**
 * A query (docs/vector.md, "Vector: endpoints" and "Vector: index types"): by `vector` and/or `sparseVector`
 * (as the index type allows), or by `data` to embed first.
 */
export interface QueryInput {
  include: Includes;
  vector?: number[];
  sparseVector?: SparseVector;
  data?: string;
  topK: number;
  /** Upstash filter text, not parsed yet; absent or blank means no filter. */
  filter?: string;
  /** `IDF`: weight the sparse query values by inverse document frequency; absent: no weighting. */
  weightingStrategy?: 'IDF';
  /** How a hybrid query fuses its two result lists; absent: RRF. */
  fusionAlgorithm?: FusionAlgorithm;
  /** Which side(s) of a hybrid index to search; absent: HYBRID. */
  queryMode?: QueryMode;
  /** What the filter reads: the metadata (absent), or an Upstash Search document's content. */
  filterOn?: 'content';
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
  sparseVector?: SparseVector;
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
 * `/upsert` and `/upsert-data`: one record or an array of them; a field that is `null` counts as absent (what
 * `upstash-vector` for Python sends for the fields it was not given).
 * @param withData true for `/upsert-data`, where every record needs `data` and no vectors
 * @param type the index type: a DENSE index takes `vector`, a SPARSE one `sparseVector`, a HYBRID one both
 */
export function parseUpsert(body: unknown, withData: boolean, type: IndexType = 'DENSE'): VectorInput[] {
  const items = Array.isArray(body) ? body : [body];
  if (items.length === 0) throw VectorError.badRequest('Nothing to upsert: the body is an empty array');
  if (items.length > LIMITS.batch) {
    throw VectorError.badRequest(`Too many vectors in one upsert: ${items.length}, at most ${LIMITS.batch}`);
  }
  return items.map((item, i) => {
    const at = Array.isArray(body) ? `[${i}]` : '';
    // A null field is an absent one: the Python SDK sends every field, `null` when not given.
    const record = Object.fromEntries(Object.entries(object(item, `the upsert body${at}`)).filter(([key, value]) => value !== null || key === 'id'));
    const out: VectorInput = { id: id(record.id, `${at}id`) };
    if (withData) {
      for (const field of ['vector', 'sparseVector'] as const) {
        if (record[field] !== undefined) throw VectorError.badRequest(`${at}${field}: /upsert-data takes data, not vectors; use /upsert`);
      }
      if (record.content !== undefined) {
        if (record.data !== undefined) throw VectorError.badRequest(`${at}content: a record takes data or content (an Upstash Search document), not both`);
        out.content = checkMetadata(record.content, `${at}content`);
        out.data = documentText(out.content);
        if (out.data === '') throw VectorError.badRequest(`${at}content has no text to index: give it at least one string, number or boolean value`);
      } else out.data = text(record.data, `${at}data`);
    } else {
      const { dense, sparse } = vectorsOf(record, at, type, 'upsert');
      if (dense === undefined && sparse === undefined) {
        const wanted = type === 'SPARSE' ? 'sparseVector' : 'vector';
        throw VectorError.badRequest(
          record.data !== undefined ? `${at}${wanted} is missing: records with only data go to /upsert-data` : `${at}${wanted} is missing`,
        );
      }
      if (type === 'HYBRID' && (dense === undefined || sparse === undefined)) {
        throw VectorError.badRequest(`${at}${dense === undefined ? 'vector' : 'sparseVector'} is missing: a hybrid index needs both vector and sparseVector`);
      }
      if (dense) out.vector = dense;
      if (sparse) out.sparseVector = sparse;
      if (record.data !== undefined) out.data = text(record.data, `${at}data`);
    }
    if (record.metadata !== undefined) out.metadata = checkMetadata(record.metadata, `${at}metadata`);
    return out;
  });
}

/**
 * The text of an Upstash Search document's `content` that is embedded and indexed (docs/vector.md, "Vector: Upstash
 * Search"): every string, number and boolean value, depth first in key order as given, one per line. Keys are left
 * out, so that a query for a field's name does not match every document.
 */
export function documentText(content: unknown): string {
  const lines: string[] = [];
  const walk = (node: unknown): void => {
    if (typeof node === 'string') {
      if (node.trim() !== '') lines.push(node);
    } else if (typeof node === 'number' || typeof node === 'boolean') lines.push(String(node));
    else if (Array.isArray(node)) node.forEach(walk);
    else if (typeof node === 'object' && node !== null) Object.values(node).forEach(walk);
  };
  walk(content);
  return lines.join('\n');
}

/** `/query` and `/query-data`: one query, or an array of them (`queryMany`). */
export function parseQueries(body: unknown, type: IndexType = 'DENSE'): { queries: QueryInput[]; many: boolean } {
  if (Array.isArray(body)) {
    if (body.length === 0) throw VectorError.badRequest('Nothing to query: the body is an empty array');
    if (body.length > LIMITS.batch) throw VectorError.badRequest(`Too many queries in one request: ${body.length}, at most ${LIMITS.batch}`);
    return { queries: body.map((q, i) => parseQuery(q, `[${i}]`, type)), many: true };
  }
  return { queries: [parseQuery(body, '', type)], many: false };
}

/**
 * One query body; `at` prefixes field names in errors. A DENSE index is queried by `vector`, a SPARSE
 * one by `sparseVector`, a HYBRID one by either or both (one side only when just one is given), and
 * every type by `data`. `weightingStrategy`, `fusionAlgorithm` and `queryMode` are checked on every
 * type and matter only where there is a sparse side (docs/vector.md, "Vector: index types").
 */
export function parseQuery(body: unknown, at = '', type: IndexType = 'DENSE'): QueryInput {
  const q = object(body, `the query body${at}`);
  const topK = integer(q.topK, `${at}topK`, 1, LIMITS.topK);
  const out: QueryInput = { topK, include: includes(q, at) };
  const { dense, sparse } = vectorsOf(q, at, type, 'query');
  if (dense) out.vector = dense;
  if (sparse) out.sparseVector = sparse;
  if (!dense && !sparse) {
    if (q.data !== undefined) out.data = text(q.data, `${at}data`);
    else {
      const what = type === 'DENSE' ? 'a vector' : type === 'SPARSE' ? 'a sparseVector' : 'a vector, a sparseVector or both';
      throw VectorError.badRequest(`${at}${type === 'SPARSE' ? 'sparseVector' : 'vector'} is missing: a query needs ${what} (or data, to query by text)`);
    }
  }
  const weighting = optionalEnum(q.weightingStrategy, `${at}weightingStrategy`, ['IDF'] as const);
  if (weighting) out.weightingStrategy = weighting;
  const fusion = optionalEnum(q.fusionAlgorithm, `${at}fusionAlgorithm`, FUSION_ALGORITHMS);
  if (fusion) out.fusionAlgorithm = fusion;
  const mode = optionalEnum(q.queryMode, `${at}queryMode`, QUERY_MODES);
  if (mode) out.queryMode = mode;
  if (q.filter !== undefined && q.filter !== null) {
    if (typeof q.filter !== 'string') throw VectorError.badRequest(`${at}filter must be a string`);
    checkWellFormed(q.filter, `${at}filter`);
    if (q.filter.trim() !== '') out.filter = q.filter;
  }
  return out;
}

/** `POST /search/<index>` of `@upstash/search` (docs/vector.md, "Vector: Upstash Search"). */
export interface DocumentSearchInput {
  query: string;
  topK: number;
  /** `data` stands for the documents' content. */
  include: Includes;
  /** Upstash filter text over the documents' content; absent: none. */
  filter?: string;
  /** The share of semantic (dense) relevance against full-text (BM25) relevance, 0 to 1; 0.75 unless given. */
  semanticWeight: number;
}

/** Upstash Search's default `semanticWeight`: 75 % semantic, 25 % full-text. */
export const DEFAULT_SEMANTIC_WEIGHT = 0.75;

/**
 * The body of `POST /search/<index>`: `{query, topK, includeData, includeMetadata, filter, semanticWeight, reranking,
 * inputEnrichment, _appendOriginalInputToEnrichmentResult}` as `@upstash/search` 0.1 sends it. `reranking` and
 * `inputEnrichment` (LLM steps of Upstash's service) are checked as booleans and not applied.
 * @throws VectorError 400 naming the field
 */
export function parseDocumentSearch(body: unknown): DocumentSearchInput {
  const b = object(body, 'the search body');
  const query = text(b.query, 'query');
  if (query.trim() === '') throw VectorError.badRequest('query must have some text');
  const out: DocumentSearchInput = {
    query,
    topK: b.topK === undefined || b.topK === null ? 5 : integer(b.topK, 'topK', 1, LIMITS.topK),
    include: { ...includes(b, ''), vectors: false },
    semanticWeight: DEFAULT_SEMANTIC_WEIGHT,
  };
  for (const flag of ['reranking', 'inputEnrichment', '_appendOriginalInputToEnrichmentResult']) bool(b[flag], flag);
  if (b.semanticWeight !== undefined && b.semanticWeight !== null) {
    const w = b.semanticWeight;
    if (typeof w !== 'number' || !Number.isFinite(w) || w < 0 || w > 1) throw VectorError.badRequest(`semanticWeight must be a number between 0 and 1, got ${JSON.stringify(w)}`);
    out.semanticWeight = w;
  }
  if (b.filter !== undefined && b.filter !== null) {
    if (typeof b.filter !== 'string') throw VectorError.badRequest('filter must be a string');
    checkWellFormed(b.filter, 'filter');
    if (b.filter.trim() !== '') out.filter = b.filter;
  }
  return out;
}

/** `/resumable-query[-data]`: a query plus `maxIdle` seconds. */
export function parseResumableStart(body: unknown, type: IndexType = 'DENSE'): ResumableStartInput {
  const q = parseQuery(body, '', type);
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

/**
 * `/fetch`: `{ids}` or `{prefix}`, and what to include. A bare id or array of ids is accepted too. An
 * empty prefix matches every id, as any prefix matches the ids starting with it: the namespace's first
 * 1000 vectors in insertion order.
 */
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

/**
 * `/range`: `{cursor, limit, prefix?}` and what to include (docs/vector.md, "Vector: records and results"). An
 * empty prefix matches every id, so it is the same as none (and pages as fast).
 */
export function parseRange(body: unknown): RangeInput {
  const b = object(body, 'the range body');
  const out: RangeInput = { cursor: cursor(b.cursor), limit: integer(b.limit, 'limit', 1, LIMITS.page), include: includes(b, '') };
  if (b.prefix !== undefined && b.prefix !== null) {
    const prefix = text(b.prefix, 'prefix', true);
    if (prefix !== '') out.prefix = prefix;
  }
  return out;
}

/**
 * `/delete`: exactly one of `ids`, `prefix`, `filter`; a bare id or array is taken as ids. An empty
 * prefix, like a blank filter, would match every vector of the namespace: both are refused (400), and
 * `reset` is the way to delete everything.
 */
export function parseDelete(body: unknown): DeleteInput {
  if (Array.isArray(body) || typeof body === 'string' || typeof body === 'number') return { ids: ids(body, Infinity) };
  const b = object(body, 'the delete body');
  const given = (['ids', 'prefix', 'filter'] as const).filter((k) => b[k] !== undefined && b[k] !== null);
  if (given.length !== 1) throw VectorError.badRequest('Only and only one of the ids, prefix, or filter must be provided.');
  if (given[0] === 'ids') return { ids: ids(b.ids, Infinity) };
  if (given[0] === 'prefix') {
    const prefix = text(b.prefix, 'prefix', true);
    if (prefix === '') throw VectorError.badRequest('prefix is empty: to delete everything, use reset');
    return { prefix };
  }
  const filter = text(b.filter, 'filter');
  if (filter.trim() === '') throw VectorError.badRequest('filter is empty: to delete everything, use reset');
  return { filter };
}

/**
 * `/update`: `{id, vector?, sparseVector?, data?, metadata?, metadataUpdateMode?}`; a hybrid index
 * takes both vectors or neither (the SDK's update test).
 */
export function parseUpdate(body: unknown, type: IndexType = 'DENSE'): UpdateInput {
  const b = object(body, 'the update body');
  const mode = b.metadataUpdateMode ?? 'OVERWRITE';
  if (mode !== 'PATCH' && mode !== 'OVERWRITE') throw VectorError.badRequest('metadataUpdateMode must be PATCH or OVERWRITE');
  const out: UpdateInput = { id: id(b.id, 'id'), metadataUpdateMode: mode };
  const { dense, sparse } = vectorsOf(b, '', type, 'update');
  if (type === 'HYBRID' && (dense === undefined) !== (sparse === undefined)) {
    throw VectorError.badRequest(`${dense === undefined ? 'vector' : 'sparseVector'} is missing: a hybrid index updates both vector and sparseVector, or neither`);
  }
  if (dense) out.vector = dense;
  if (sparse) out.sparseVector = sparse;
  if (b.data !== undefined) out.data = text(b.data, 'data');
  if (b.metadata !== undefined) out.metadata = checkMetadata(b.metadata, 'metadata');
  if (out.vector === undefined && out.sparseVector === undefined && out.data === undefined && out.metadata === undefined) {
    throw VectorError.badRequest(`Nothing to update: give ${type === 'DENSE' ? 'vector' : type === 'SPARSE' ? 'sparseVector' : 'vector and sparseVector'}, data or metadata`);
  }
  return out;
}

/**
 * The `vector` and `sparseVector` fields of a record or query, validated, refusing the one the index
 * type has no room for (a dense index has no sparse side, a sparse index no dense side).
 * @throws VectorError 400 naming the field
 */
function vectorsOf(b: Record<string, unknown>, at: string, type: IndexType, what: string): { dense?: number[]; sparse?: SparseVector } {
  const out: { dense?: number[]; sparse?: SparseVector } = {};
  if (b.vector !== undefined && b.vector !== null) {
    if (type === 'SPARSE') throw VectorError.badRequest(`${at}vector: this index is sparse, its ${what} takes sparseVector, not vector`);
    out.dense = vector(b.vector, `${at}vector`);
  }
  if (b.sparseVector !== undefined && b.sparseVector !== null) {
    if (type === 'DENSE') throw VectorError.badRequest(`${at}sparseVector: this index is dense, it has no sparse vectors`);
    out.sparse = parseSparseVector(b.sparseVector, `${at}sparseVector`);
  }
  return out;
}

function optionalEnum<T extends string>(value: unknown, field: string, allowed: readonly T[]): T | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw VectorError.badRequest(`${field} must be one of ${allowed.join(', ')}`);
  }
  return value as T;
}

/**
 * The dimension rule (docs/vector.md, "Vector: errors"): status 422, `Invalid vector dimension: <given>, expected: <dimension>`.
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
  // Vectors are stored as float32: a component that rounds to Infinity there is refused.
  const problem = float32Problem(value);
  if (problem) throw VectorError.badRequest(`${field}${problem}`);
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

/** `/rename-namespace`: `{namespace, newNamespace, deleteExisting?}` (Upstash docs, rename-namespace). */
export interface RenameNamespaceInput {
  namespace: string;
  newNamespace: string;
  deleteExisting: boolean;
}

/**
 * `/rename-namespace`'s body. Neither name may be the default namespace "" (it cannot be renamed, and
 * it always exists).
 * @throws VectorError 400 naming the field
 */
export function parseRenameNamespace(body: unknown): RenameNamespaceInput {
  const b = object(body, 'the rename-namespace body');
  const out: RenameNamespaceInput = {
    namespace: checkNamespace(text(b.namespace, 'namespace', true), 'namespace'),
    newNamespace: checkNamespace(text(b.newNamespace, 'newNamespace', true), 'newNamespace'),
    deleteExisting: bool(b.deleteExisting, 'deleteExisting'),
  };
  if (out.namespace === '') throw VectorError.badRequest('namespace: the default namespace cannot be renamed');
  if (out.newNamespace === '') throw VectorError.badRequest('newNamespace: the default namespace always exists; rename to another name');
  return out;
}
