import { QdrantClient } from '@qdrant/js-client-rest';
import { Agent } from 'undici';
import { QdrantIndexStore } from './qdrant-index-store';
import type { IndexLocation } from './vectors';

/**
 * Qdrant clients by endpoint and stores by index, shared by every request of a gateway. Stores of an
 * index live until {@link drop}; a client lives while a store uses it.
 */
export class QdrantStores {
  private readonly clients = new Map<string, QdrantClient>();
  private readonly stores = new Map<string, QdrantIndexStore>();
  /** The searches' connections, every endpoint's (undici keeps a pool per origin). */
  private readonly agent = new Agent({ keepAliveTimeout: 30_000 });

  constructor(
    private readonly options: { timeoutMs: number },
    private readonly pointId: (namespace: string, id: string) => string,
  ) {}

  /** The store of an index; a changed location (collection, shape or endpoint) gives a new one. */
  get(indexId: string, location: IndexLocation): QdrantIndexStore {
    const key = `${indexId}\0${JSON.stringify(location)}`;
    let store = this.stores.get(key);
    if (!store) {
      const clientKey = `${location.url}\0${location.apiKey ?? ''}`;
      let client = this.clients.get(clientKey);
      if (!client) {
        // checkCompatibility off: a version probe per client would warn for every Qdrant minor release.
        client = new QdrantClient({ url: location.url, apiKey: location.apiKey, timeout: this.options.timeoutMs, checkCompatibility: false });
        this.clients.set(clientKey, client);
      }
      store = new QdrantIndexStore(client, location, this.pointId, { agent: this.agent, timeoutMs: this.options.timeoutMs });
      this.stores.set(key, store);
    }
    return store;
  }

  /** Forgets every store of an index, and the clients no store uses any more (its record changed or went). */
  drop(indexId: string): void {
    for (const key of this.stores.keys()) if (key.startsWith(`${indexId}\0`)) this.stores.delete(key);
    const used = new Set([...this.stores.values()].map((s) => `${s.location.url}\0${s.location.apiKey ?? ''}`));
    for (const key of this.clients.keys()) if (!used.has(key)) this.clients.delete(key);
  }

  /** How many index stores are open. */
  get size(): number {
    return this.stores.size;
  }
}
