import type { VectorIndexRecord } from '@restash/shared/data-access-registry';
import type { Embedder } from '@restash/vector/data-access-embedder';
import type { QdrantIndexStore } from '@restash/vector/data-access-qdrant';
import type { IndexState } from './index-state';

/**
 * The ports of the Vector API's logic (docs/vector.md, "What the Vector API does"): what VectorIndexService needs from
 * the world, injected by the app (apps/vector-gateway/src/app.module.ts) and faked in unit tests
 * (src/testing/fakes.ts).
 */

/** One index's vectors in the engine: Qdrant's collection (libs/vector/data-access-qdrant, QdrantIndexStore). */
export type IndexStore = Pick<
  QdrantIndexStore,
  | 'upsert'
  | 'retrieve'
  | 'search'
  | 'fusedSearch'
  | 'random'
  | 'scroll'
  | 'walk'
  | 'countByNamespace'
  | 'deleteIds'
  | 'deleteWhere'
  | 'countWithDimensions'
  | 'count'
  | 'countAll'
  | 'deleteAll'
>;

/** What the engine does not hold, shared by every replica: namespaces, write versions, resumable queries (IndexState in the control Redis). */
export type IndexStatePort = Pick<
  IndexState,
  'reserve' | 'namespaces' | 'exists' | 'restart' | 'rename' | 'wrote' | 'versions' | 'remove' | 'saveResumable' | 'loadResumable' | 'endResumable'
>;

/** An index's embedding model, one per index record (OpenAiEmbedder through the SSRF guard unless the platform's). */
export type EmbedderFactory = (embedder: NonNullable<VectorIndexRecord['embedder']>) => Embedder;

/** Where backend failures are counted (the app's Prometheus metrics). */
export interface VectorObserver {
  /** One failed call of a tenant's request to Qdrant (`engine`) or to the embedding provider (`embedder`). */
  backendError(tenant: string, backend: 'engine' | 'embedder'): void;
}

/**
 * Runs a call on the control Redis for a tenant's request (TenantGate.registryCall).
 * @throws TenantDenied `registry-unavailable` when the control Redis cannot be reached
 */
export type RegistryCall = <T>(tenant: string, run: () => Promise<T>) => Promise<T>;

/** An authenticated request's index: its tenant, registry record and engine store. */
export interface IndexSession {
  tenant: string;
  index: VectorIndexRecord;
  store: IndexStore;
}

/** The limits VectorIndexService applies (VectorGatewayConfig). */
export interface VectorIndexLimits {
  /** The most hits a query reads from the engine to apply a filter exactly or settle ties at the cut (FILTER_SCAN_LIMIT). */
  filterScanLimit: number;
}
