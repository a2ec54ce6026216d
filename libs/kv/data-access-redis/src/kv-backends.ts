import { KvBackend, type KvBackendOptions } from './kv-backend';

/**
 * The backends of every KV database this gateway has served, by database id. A database whose
 * Redis URL changed in the registry gets a fresh backend; the old one is closed.
 */
export class KvBackends {
  private readonly backends = new Map<string, KvBackend>();

  constructor(private readonly options: KvBackendOptions) {}

  /**
   * The backend of a database, created on first use.
   * @param onServerChange given to a backend created now: see KvBackend.onServerChange
   * @param onError given to a backend created now: see KvBackend.onError
   */
  get(id: string, url: string, onServerChange?: (runId: string) => void, onError?: (error: Error) => void): KvBackend {
    const existing = this.backends.get(id);
    if (existing?.url === url) return existing;
    if (existing) void existing.close();
    const backend = new KvBackend(url, this.options);
    if (onServerChange) backend.onServerChange(onServerChange);
    if (onError) backend.onError(onError);
    this.backends.set(id, backend);
    return backend;
  }

  /** The backend of a database if this gateway has one. */
  find(id: string): KvBackend | undefined {
    return this.backends.get(id);
  }

  /**
   * Closes a database's backend (its pools, transaction and ACL-user connections, subscriptions) and
   * forgets it; the next {@link get} opens a fresh one. No-op when there is none.
   */
  async drop(id: string): Promise<void> {
    const backend = this.backends.get(id);
    if (!backend) return;
    this.backends.delete(id);
    await backend.close();
  }

  entries(): IterableIterator<[string, KvBackend]> {
    return this.backends.entries();
  }

  async close(): Promise<void> {
    await Promise.all([...this.backends.values()].map((b) => b.close()));
    this.backends.clear();
  }
}
