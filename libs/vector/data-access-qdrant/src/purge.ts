import { QdrantClient } from '@qdrant/js-client-rest';
import type { VectorIndexRecord } from '@restash/shared/data-access-registry';

/**
 * Deletes a vector index's data: its whole Qdrant collection (every namespace). An index whose
 * collection is already gone is not an error. Used when a tenant or one of its indexes is deleted
 * (`tenants delete`); the index's namespace list in the control Redis is the caller's to delete.
 *
 * @param record the index's registry record (`qdrantUrl`, `qdrantApiKey` and `collection` are used)
 * @throws Error when Qdrant cannot be reached or refuses the deletion
 */
export async function purgeVectorIndex(record: Pick<VectorIndexRecord, 'qdrantUrl' | 'qdrantApiKey' | 'collection'>): Promise<void> {
  const client = new QdrantClient({ url: record.qdrantUrl, apiKey: record.qdrantApiKey, checkCompatibility: false });
  try {
    await client.deleteCollection(record.collection);
  } catch (error) {
    const status = (error as { status?: unknown }).status;
    if (status === 404) return; // a real Qdrant answers 404 for a missing collection; qdrant-local answers 200 false
    const detail = (error as { data?: { status?: { error?: string } } }).data?.status?.error ?? (error as Error).message;
    throw new Error(`could not delete Qdrant collection ${record.collection} at ${record.qdrantUrl}: ${detail}`);
  }
}
