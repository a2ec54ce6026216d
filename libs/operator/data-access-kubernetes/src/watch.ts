import { Informer, KubeConfig, KubernetesListObject, KubernetesObject, makeInformer, ObjectCache } from '@kubernetes/client-node';

/** What happened to an object: a watch event, or `resync` (periodic replay of the whole cache). */
export type WatchEventType = 'add' | 'update' | 'delete' | 'resync';

/** Why the watch was restarted (for logs and a counter). */
export type WatchRestartReason = 'error' | 'stale';

export interface WatchOptions<T extends KubernetesObject> {
  config: KubeConfig;
  /** The collection's URL path, e.g. `/apis/restash.dev/v1alpha1/kvdatabases` (all namespaces). */
  path: string;
  /** Lists the same collection (its `metadata.resourceVersion` starts the watch). */
  list: () => Promise<KubernetesListObject<T>>;
  onEvent: (type: WatchEventType, object: T) => void;
  /** A list or watch failed; the watch restarts by itself after a backoff (1 s doubling to 30 s). */
  onError?: (error: unknown) => void;
  onRestart?: (reason: WatchRestartReason) => void;
  /** Every `resyncMs`, `onEvent('resync', o)` for every cached object (default 5 min; 0 = never). */
  resyncMs?: number;
  /**
   * Restart when nothing (event, reconnect) came for this long (default 120 s). The library's watch
   * reconnects after 30 s without data (its own guard against a dead connection), so a healthy quiet
   * watch shows a reconnect at least that often; longer silence means a list hung, which the
   * library never times out. Keep it above 30 s: below, a quiet watch is restarted (a relist, no
   * events for unchanged objects) every `staleAfterMs`.
   */
  staleAfterMs?: number;
  /** Backoff between restarts after errors (defaults 1 s, 30 s). */
  restartBaseMs?: number;
  restartMaxMs?: number;
}

/** A running watch; see {@link watchResources}. */
export interface ResourceWatch<T extends KubernetesObject> {
  /** Resolves after the first successful list, when `cache` holds every object. */
  readonly synced: Promise<void>;
  /** The objects as last seen: `list(namespace?)` (all namespaces without one), `get(name, namespace)`. */
  readonly cache: ObjectCache<T>;
  /** Times the watch was restarted (after errors or silence). */
  readonly restarts: number;
  /** Stops watching; no `onEvent` after it resolves. */
  stop(): Promise<void>;
}

/**
 * Lists and watches a collection with client-node's informer (`makeInformer`), adding what it
 * lacks for an operator:
 *
 * - restart with backoff: the informer reconnects by itself only after a stream end, a client
 *   timeout or 410 Gone, and stops on any other error (a refused connection, a 5xx); a stopped
 *   informer is replaced by a new one after 1 s, 2 s, … 30 s (reset once a list succeeds). The
 *   replacement lists again; objects it no longer finds are reported as `delete`, changed ones as
 *   `update`, unchanged ones not at all (the cache carries over);
 * - stale-watch detection: no event or reconnect for `staleAfterMs` → restart;
 * - periodic resync: every object replayed as `resync` every `resyncMs`, so level-triggered
 *   reconcilers repair drift that produced no event.
 *
 * Events are delivered synchronously from the informer; keep `onEvent` cheap (enqueue a key).
 */
export function watchResources<T extends KubernetesObject>(options: WatchOptions<T>): ResourceWatch<T> {
  return new Watcher(options);
}

class Watcher<T extends KubernetesObject> implements ResourceWatch<T> {
  readonly synced: Promise<void>;
  restarts = 0;
  private resolveSynced!: () => void;
  private informer: (Informer<T> & ObjectCache<T>) | undefined;
  /** Incremented per informer; callbacks of a replaced informer are ignored. */
  private generation = 0;
  /** The cache of the replaced informer, until its replacement has listed. */
  private carried: Map<string, T> | undefined;
  private lastSeen = Date.now();
  private delayMs: number;
  private restartTimer: NodeJS.Timeout | undefined;
  private readonly staleTimer: NodeJS.Timeout;
  private readonly resyncTimer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly staleAfterMs: number;
  private readonly baseMs: number;
  private readonly maxMs: number;

  constructor(private readonly options: WatchOptions<T>) {
    this.synced = new Promise((resolve) => (this.resolveSynced = resolve));
    this.staleAfterMs = options.staleAfterMs ?? 120_000;
    this.baseMs = options.restartBaseMs ?? 1_000;
    this.maxMs = options.restartMaxMs ?? 30_000;
    this.delayMs = this.baseMs;
    this.staleTimer = setInterval(() => this.checkStale(), Math.max(100, Math.floor(this.staleAfterMs / 4)));
    this.staleTimer.unref();
    const resyncMs = options.resyncMs ?? 5 * 60_000;
    if (resyncMs > 0) {
      this.resyncTimer = setInterval(() => this.resync(), resyncMs);
      this.resyncTimer.unref();
    }
    this.startInformer();
  }

  get cache(): ObjectCache<T> {
    return {
      get: (name, namespace) => (this.carried ? this.carried.get(keyOf(namespace, name)) : this.informer?.get(name, namespace)),
      list: (namespace) => (this.carried ? [...this.carried.values()].filter((o) => !namespace || o.metadata?.namespace === namespace) : (this.informer?.list(namespace) ?? [])),
    };
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.staleTimer);
    if (this.resyncTimer) clearInterval(this.resyncTimer);
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.generation += 1;
    await this.informer?.stop();
  }

  private startInformer(): void {
    const generation = ++this.generation;
    const current = () => generation === this.generation && !this.stopped;
    let listed = false;
    let failed = false;
    const informer = makeInformer<T>(this.options.config, this.options.path, async () => {
      const list = await this.options.list();
      listed = true;
      return list;
    });
    const deliver = (type: WatchEventType) => (object: T) => {
      if (!current()) return;
      this.lastSeen = Date.now();
      if (type === 'add') {
        // After a restart the new informer reports every object as added; compare with what was known.
        const before = this.carried?.get(keyOfObject(object));
        if (before && before.metadata?.resourceVersion === object.metadata?.resourceVersion) return;
        if (before) type = 'update';
      }
      this.options.onEvent(type, object);
    };
    informer.on('add', deliver('add'));
    informer.on('update', deliver('update'));
    informer.on('delete', deliver('delete'));
    informer.on('connect', () => {
      if (current()) this.lastSeen = Date.now();
    });
    const fail = (error: unknown) => {
      if (!current()) return;
      failed = true;
      this.options.onError?.(error);
      this.scheduleRestart('error');
    };
    informer.on('error', fail);
    this.informer = informer;
    this.lastSeen = Date.now();
    void informer.start().then(() => {
      // A replaced informer whose list was still running has just opened a watch despite its stop().
      if (generation !== this.generation || this.stopped) return void informer.stop();
      if (!listed) return;
      if (!failed) this.delayMs = this.baseMs;
      this.settleCarried(informer);
      this.resolveSynced();
    }, fail);
  }

  /** After a replacement informer listed: what the old cache had and the new one lacks was deleted. */
  private settleCarried(informer: ObjectCache<T>): void {
    const carried = this.carried;
    if (!carried) return;
    this.carried = undefined;
    for (const object of carried.values()) {
      const { namespace, name = '' } = object.metadata ?? {};
      if (!informer.get(name, namespace)) this.options.onEvent('delete', object);
    }
  }

  private scheduleRestart(reason: WatchRestartReason): void {
    if (this.stopped || this.restartTimer) return;
    const delay = reason === 'stale' ? 0 : this.delayMs;
    if (reason === 'error') this.delayMs = Math.min(this.delayMs * 2, this.maxMs);
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      void this.restart(reason);
    }, delay);
    this.restartTimer.unref();
  }

  private async restart(reason: WatchRestartReason): Promise<void> {
    if (this.stopped) return;
    const old = this.informer;
    // Keep the last known objects (a previous failed replacement may still be carrying them).
    if (!this.carried && old) this.carried = new Map(old.list().map((o) => [keyOfObject(o), o]));
    this.restarts += 1;
    this.lastSeen = Date.now(); // no second stale restart while this one is under way
    this.options.onRestart?.(reason);
    this.generation += 1; // silence the old informer before stopping it: its stop emits an abort error
    await old?.stop().catch(() => undefined);
    if (!this.stopped) this.startInformer();
  }

  private checkStale(): void {
    if (this.stopped || this.restartTimer) return;
    if (Date.now() - this.lastSeen > this.staleAfterMs) this.scheduleRestart('stale');
  }

  private resync(): void {
    if (this.stopped) return;
    for (const object of this.cache.list()) this.options.onEvent('resync', object);
  }
}

function keyOf(namespace: string | undefined, name: string): string {
  return `${namespace ?? ''}/${name}`;
}

function keyOfObject(object: KubernetesObject): string {
  return keyOf(object.metadata?.namespace, object.metadata?.name ?? '');
}
