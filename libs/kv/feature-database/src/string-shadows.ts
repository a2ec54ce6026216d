import { Logger } from '@nestjs/common';
import { type CommandArgs, commandName, isShadowKey, keyArguments } from '@restash/kv/util-command';
import { STRING_PREFIXES_TTL_MS, SYNC_BATCH, covered, loadStringPrefixes, syncCommand } from '@restash/kv/util-search';
import { logEvent } from '@restash/shared/util-http';
import type { KvSession } from './ports';

/**
 * Keeps the JSON shadows of string keys indexed by `SEARCH.CREATE … ON STRING` in step with the tenant's writes
 * (docs/kv.md, "KV: Search"; libs/kv/util-search/src/string-index.ts): after a write, each key it touched that is
 * under a string index's prefix has its shadow set or deleted by one script, before the answer goes out, so a query
 * made after the answer sees the write. The prefixes of a database's string indexes are read again when they are
 * older than STRING_PREFIXES_TTL_MS (SEARCH.CREATE and DROP wait that long before they scan, for every gateway).
 */
export class StringShadows {
  private readonly logger = new Logger('StringShadows');
  /** Per database id: the string-index prefixes (bytes), and when their read started (ms). */
  private readonly prefixes = new Map<string, { since: number; value: Promise<Buffer[]> }>();
  /** The cache's size at which entries older than the TTL (databases no longer written, or removed) are dropped. */
  private pruneAt = 64;

  constructor(private readonly ttlMs = STRING_PREFIXES_TTL_MS) {}

  /** Forgets the prefixes read for a database: a string index of it was created or dropped. */
  forget(database: string): void {
    this.prefixes.delete(database);
  }

  /**
   * Brings in step the shadows of the keys `commands` (writes that were answered without error) touched. A failure
   * of the server here is logged, not thrown: the writes themselves succeeded, and SEARCH.CREATE's scan or the
   * next write of a key brings its shadow back in step.
   */
  async afterWrites(session: KvSession, commands: readonly CommandArgs[]): Promise<void> {
    if (commands.length === 0 || session.db !== 0 || !session.table.get('ft.search')) return;
    try {
      const prefixes = await this.prefixesOf(session);
      if (prefixes.length === 0) return;
      const keys = new Map<string, Buffer>();
      for (const args of commands) {
        for (const key of await this.keysOf(session, args)) {
          const bytes = typeof key === 'string' ? Buffer.from(key) : key;
          if (!isShadowKey(bytes) && covered(prefixes, bytes)) keys.set(bytes.toString('latin1'), bytes);
        }
      }
      const all = [...keys.values()];
      for (let i = 0; i < all.length; i += SYNC_BATCH) await session.backend.run(syncCommand(all.slice(i, i + SYNC_BATCH)));
    } catch (error) {
      logEvent(this.logger, 'warn', 'kv.search.shadow-sync-failed', {
        tenant: session.tenant,
        database: session.database.id,
        error: error instanceof Error ? error.message : String(error),
        text: 'a string index may miss the last writes of its keys until they are written again',
      });
    }
  }

  private prefixesOf(session: KvSession): Promise<Buffer[]> {
    const id = session.database.id;
    const now = Date.now();
    const known = this.prefixes.get(id);
    if (known && now - known.since < this.ttlMs) return known.value;
    if (this.prefixes.size >= this.pruneAt) {
      for (const [other, entry] of this.prefixes) if (now - entry.since >= this.ttlMs) this.prefixes.delete(other);
      this.pruneAt = Math.max(64, this.prefixes.size * 2);
    }
    const value = loadStringPrefixes((args) => session.backend.run(args)).then((found) => found.map((p) => Buffer.from(p)));
    this.prefixes.set(id, { since: now, value });
    value.catch(() => {
      if (this.prefixes.get(id)?.value === value) this.prefixes.delete(id);
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
