import { Logger } from '@nestjs/common';
import { type CommandArgs, commandName, isShadowKey, keyArguments } from '@restash/kv/util-command';
import {
  STRING_PREFIXES_TTL_MS,
  SYNC_BATCH,
  type StreamSyncMode,
  covered,
  deletedEntryIds,
  loadShadowedSources,
  streamSyncCommand,
  streamSyncModeOf,
  syncCommand,
} from '@restash/kv/util-search';
import { logEvent } from '@restash/shared/util-http';
import type { KvSession } from './ports';

/** What a database's indexes shadow: string-index prefixes (bytes), and indexed streams (keys as latin1 text). */
interface Sources {
  prefixes: Buffer[];
  streams: Set<string>;
}

/**
 * Keeps the shadows of string keys indexed by `SEARCH.CREATE … ON STRING` and of the entries of streams indexed by
 * `… ON STREAM` in step with the tenant's writes (docs/kv.md, "KV: Search"; libs/kv/util-search/src/string-index.ts,
 * stream-index.ts): after a write, each key it touched that is under a string index's prefix has its shadow set or
 * deleted by one script, and each indexed stream it touched is synced by another, before the answer goes out, so a
 * query made after the answer sees the write. What a database's indexes shadow is read again when it is older than
 * STRING_PREFIXES_TTL_MS (SEARCH.CREATE and DROP wait that long before they scan, for every gateway).
 */
export class SearchShadows {
  private readonly logger = new Logger('SearchShadows');
  /** Per database id: the string-index prefixes (bytes) and indexed streams, and when their read started (ms). */
  private readonly sources = new Map<string, { since: number; value: Promise<Sources> }>();
  /** The cache's size at which entries older than the TTL (databases no longer written, or removed) are dropped. */
  private pruneAt = 64;

  constructor(private readonly ttlMs = STRING_PREFIXES_TTL_MS) {}

  /** Forgets what was read for a database: a string or stream index of it was created or dropped. */
  forget(database: string): void {
    this.sources.delete(database);
  }

  /**
   * Brings in step the shadows of the keys `commands` (writes that were answered without error) touched. A failure
   * of the server here is logged, not thrown: the writes themselves succeeded, and SEARCH.CREATE's scan or the
   * next write of a key brings its shadow back in step.
   */
  async afterWrites(session: KvSession, commands: readonly CommandArgs[]): Promise<void> {
    if (commands.length === 0 || session.db !== 0 || !session.table.get('ft.search')) return;
    try {
      const { prefixes, streams } = await this.sourcesOf(session);
      if (prefixes.length === 0 && streams.size === 0) return;
      const keys = new Map<string, Buffer>();
      const streamSyncs = new Map<string, { stream: Buffer; mode: StreamSyncMode; deleted: string[] }>();
      for (const args of commands) {
        for (const key of await this.keysOf(session, args)) {
          const bytes = typeof key === 'string' ? Buffer.from(key) : key;
          if (isShadowKey(bytes)) continue;
          const id = bytes.toString('latin1');
          if (covered(prefixes, bytes)) keys.set(id, bytes);
          const mode = streams.has(id) ? streamSyncModeOf(args) : undefined;
          if (mode === undefined) continue;
          const known = streamSyncs.get(id);
          streamSyncs.set(id, { stream: bytes, mode: known?.mode === 'full' ? 'full' : mode, deleted: [...(known?.deleted ?? []), ...deletedEntryIds(args)] });
        }
      }
      const all = [...keys.values()];
      for (let i = 0; i < all.length; i += SYNC_BATCH) await session.backend.run(syncCommand(all.slice(i, i + SYNC_BATCH)));
      for (const { stream, mode, deleted } of streamSyncs.values()) await session.backend.run(streamSyncCommand(stream, mode, deleted));
    } catch (error) {
      logEvent(this.logger, 'warn', 'kv.search.shadow-sync-failed', {
        tenant: session.tenant,
        database: session.database.id,
        error: error instanceof Error ? error.message : String(error),
        text: 'a string or stream index may miss the last writes of its keys until they are written again',
      });
    }
  }

  private sourcesOf(session: KvSession): Promise<Sources> {
    const id = session.database.id;
    const now = Date.now();
    const known = this.sources.get(id);
    if (known && now - known.since < this.ttlMs) return known.value;
    if (this.sources.size >= this.pruneAt) {
      for (const [other, entry] of this.sources) if (now - entry.since >= this.ttlMs) this.sources.delete(other);
      this.pruneAt = Math.max(64, this.sources.size * 2);
    }
    const value = loadShadowedSources((args) => session.backend.run(args)).then(
      (found): Sources => ({ prefixes: found.stringPrefixes.map((p) => Buffer.from(p)), streams: new Set(found.streams.map((s) => Buffer.from(s).toString('latin1'))) }),
    );
    this.sources.set(id, { since: now, value });
    value.catch(() => {
      if (this.sources.get(id)?.value === value) this.sources.delete(id);
    });
    return value;
  }

  /** The keys of a command: its spec's key positions, or the server's COMMAND GETKEYS for movable keys. */
  private async keysOf(session: KvSession, args: CommandArgs): Promise<Array<string | Buffer>> {
    const spec = session.table.resolve(commandName(args), args.length > 1 ? String(args[1]) : undefined);
    if (!spec) return [];
    const keys = keyArguments(spec, args);
    if (keys) return keys;
    try {
      const reply = await session.backend.run(['COMMAND', 'GETKEYS', ...args]);
      return Array.isArray(reply) ? (reply as Buffer[]) : [];
    } catch {
      return []; // a command line without keys (EVAL … 0)
    }
  }
}
