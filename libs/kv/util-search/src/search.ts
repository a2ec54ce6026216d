import { KvError, type CommandArgs, type Reply } from '@restash/kv/util-command';
import { runAggregations } from './aggregate';
import { addAlias, applyPendingAliases, deleteAlias, forgetDroppedAliases, listAliases } from './aliases';
import { type DateValues, dateFieldsToRead, filterToQuery } from './filter';
import { type SearchRunner, info, isMissingIndex, removed } from './ft';
import { listIndexesReply, pageOf, parseListIndexes } from './listing';
import { type QueryRequest, ftCountArgs, ftSearchArgs, fullSearch, highlightTagFields, parseQuery, searchReply, translateFilter } from './query';
import { bad, list, num, pairs, text } from './reply';
import { describeReply, ftCreateArgs, parseCreate, schemaFromInfo, type IndexSchema } from './schema';
import { entryIdHits, streamSyncCommand } from './stream-index';
import { STRING_PREFIXES_TTL_MS, deleteShadows, loadShadowedSources, syncPrefixes, unshadowHits } from './string-index';

/** True for `search.*` names (lower-case). */
export function isSearchCommand(name: string): boolean {
  return name.startsWith('search.');
}

const WRITES = new Set(['search.create', 'search.drop', 'search.aliasadd', 'search.aliasdel']);

/** True for the SEARCH.* commands that change state (CREATE, DROP, ALIASADD, ALIASDEL). */
export function isSearchWrite(name: string): boolean {
  return WRITES.has(name);
}

/** What the gateway knows about the database. */
export interface SearchOptions {
  /** Whether the server has the Redis Query Engine (the `search` module, FT.* commands). */
  queryEngine: boolean;
  /** The logical database of the KV database on its server; RediSearch indexes only db 0. */
  db?: number;
  /**
   * How long SEARCH.CREATE and SEARCH.DROP of a string or stream index wait before they scan, for every gateway to
   * see the change (STRING_PREFIXES_TTL_MS unless set).
   */
  settleMs?: number;
  /** Called once a string or stream index was created or dropped (this gateway reads what it shadows again). */
  onShadowedIndexChange?: () => void;
}

/** The text of SEARCH.* on a server without the Query Engine. */
export const NO_QUERY_ENGINE = 'ERR Search is not available on this database (the server has no Redis Query Engine)';
/** The text of SEARCH.* on a database that is not logical db 0. */
export const NOT_DB0 = 'ERR Search is not available on this database (the Redis Query Engine indexes only logical database 0)';

/** How long SEARCH.WAITINDEXING waits for a background scan before answering 0. */
export const WAIT_INDEXING_MS = 30_000;

/** Waits for every gateway to read what it shadows again (SearchOptions.settleMs). */
function settle(options: SearchOptions): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, options.settleMs ?? STRING_PREFIXES_TTL_MS));
}

/**
 * SEARCH.QUERY's hits (`[[key, score, [[field, value]…]]…]`, query.ts searchReply) of an index that exists: one
 * FT.SEARCH, or fullSearch for SCOREFUNC and DATE ranges; keyword-like fields highlighted by the gateway; a string
 * index's shadow keys named as the keys they shadow, a stream index's by their entry IDs.
 * @throws KvError 400 for a filter or option the index cannot answer (query.ts)
 */
async function queryHits(redis: SearchRunner, index: string, request: QueryRequest, schema: IndexSchema): Promise<Reply> {
  const filter = translateFilter(request, schema, await dateValuesOf(redis, index, dateFieldsToRead(request.filter, schema, true)));
  const hits =
    filter.ranges.length > 0 || request.scoreFunction !== undefined
      ? await fullSearch(index, request, schema, filter, (ft) => redis.run(ft))
      : searchReply(await redis.run(ftSearchArgs(index, request, schema, filter.query)), request.noContent);
  const reply = highlightTagFields(hits, request, schema);
  if (schema.dataType === 'stream') return entryIdHits(reply);
  return schema.dataType === 'string' ? unshadowHits(reply) : reply;
}

/** The distinct values of each of `paths` (DATE fields) in the index (FT.TAGVALS; filter.ts DateValues). */
async function dateValuesOf(redis: SearchRunner, index: string, paths: readonly string[]): Promise<DateValues> {
  const out = new Map<string, string[]>();
  for (const path of paths) out.set(path, list(await redis.run(['FT.TAGVALS', index, path])).map((v) => text(v)));
  return out;
}

function arity(args: string[], n: number, name: string): void {
  if (args.length !== n) throw bad(`wrong number of arguments for '${name}' command`);
}

async function schemaOf(redis: SearchRunner, index: string): Promise<IndexSchema> {
  const reply = await info(redis, index);
  if (reply === null) throw bad(`search index '${index}' does not exist`);
  return schemaFromInfo(reply);
}

/**
 * Runs one SEARCH.* command (the `@upstash/redis` search client) as FT.* commands on the tenant's own server and
 * answers in Upstash's reply shapes: CREATE → OK (a string or stream index: once its shadows were made,
 * string-index.ts, stream-index.ts); DROP, ALIASDEL → 1 (0 when nothing was there; DROP of a string or stream index
 * deletes the shadows no other index reads);
 * ALIASADD → 1, or 2 when the alias existed (an alias of an index that does not exist yet waits for it, aliases.ts);
 * LISTALIASES → `[[alias, index]…]` of the aliases made through SEARCH.ALIASADD (aliases.ts);
 * LISTINDEXES → `[[name, n, type, HASH|JSON|STRING|STREAM]…]`; DESCRIBE → the describe array or nil; QUERY →
 * `[[key, score, [[field, value]…]]…]` (a stream index's keys are entry IDs); COUNT → integer;
 * AGGREGATE → `[name, value, …]` (with `LIMIT n`: `[[name, value, …], hits]`, the hits as QUERY's); WAITINDEXING → 1 once the background scan is done (0 after
 * WAIT_INDEXING_MS). Of an index that does not exist: DESCRIBE and QUERY nil, COUNT -1, WAITINDEXING 0 (as Upstash).
 * @throws KvError 400 for bad input (Upstash-like text),
 *   NO_QUERY_ENGINE when `options.queryEngine` is false, NOT_DB0 on a logical database other than 0;
 *   Redis error replies of FT.* (e.g. an alias that exists) as they come
 */
export async function runSearchCommand(args: CommandArgs, redis: SearchRunner, options: SearchOptions): Promise<Reply> {
  return wire(await translate(args, redis, options));
}

/**
 * Every text of a reply as bytes: the encoder sends Buffers as (base64) strings and JS strings only for
 * integers, so a text left as a JS string would reach a base64 client undecodable.
 */
export function wire(reply: Reply): Reply {
  if (typeof reply === 'string') return Buffer.from(reply);
  if (Array.isArray(reply)) return reply.map(wire);
  return reply;
}

async function translate(args: CommandArgs, redis: SearchRunner, options: SearchOptions): Promise<Reply> {
  const name = text(args[0]).toLowerCase();
  const rest = args.slice(1).map((a) => text(a));
  if (!options.queryEngine) throw KvError.badRequest(NO_QUERY_ENGINE);
  if (options.db !== undefined && options.db !== 0) throw KvError.badRequest(NOT_DB0);
  switch (name) {
    case 'search.create': {
      const request = parseCreate(rest);
      const run = (args: CommandArgs) => redis.run(args);
      const stream = request.dataType === 'stream' ? (request.prefixes[0] as string) : undefined;
      // SKIPINITIALSCAN of the first index of a stream: its entries so far count as seen (shadows are shared).
      const skipped = stream !== undefined && request.skipInitialScan && !(await loadShadowedSources(run)).streams.includes(stream);
      if (skipped) await run(streamSyncCommand(stream, 'skip'));
      try {
        await redis.run(ftCreateArgs(request));
      } catch (error) {
        if (skipped && !(await loadShadowedSources(run)).streams.includes(stream)) await run(streamSyncCommand(stream, 'drop'));
        if (!(request.existsOk && error instanceof Error && /already exists/i.test(error.message))) throw error;
        return 'OK';
      }
      await applyPendingAliases(redis, request.name);
      if (request.dataType === 'string') {
        options.onShadowedIndexChange?.();
        if (!request.skipInitialScan) {
          await settle(options);
          await syncPrefixes(run, request.prefixes);
        }
      }
      if (stream !== undefined) {
        options.onShadowedIndexChange?.();
        await settle(options);
        await run(streamSyncCommand(stream, request.skipInitialScan ? 'append' : 'full'));
      }
      return 'OK';
    }
    case 'search.drop': {
      arity(rest, 1, name);
      const before = await info(redis, rest[0] as string);
      const dropped = await removed(redis, ['FT.DROPINDEX', rest[0] as string], isMissingIndex);
      const schema = before === null ? undefined : schemaFromInfo(before);
      const run = (args: CommandArgs) => redis.run(args);
      if (dropped === 1 && schema?.dataType === 'string') {
        // Its shadows go, except those another string index still reads.
        options.onShadowedIndexChange?.();
        await settle(options);
        await deleteShadows(run, schema.prefixes, (await loadShadowedSources(run)).stringPrefixes);
      }
      const stream = schema?.dataType === 'stream' ? schema.prefixes[0] : undefined;
      if (dropped === 1 && stream !== undefined) {
        options.onShadowedIndexChange?.();
        await settle(options);
        if (!(await loadShadowedSources(run)).streams.includes(stream)) await run(streamSyncCommand(stream, 'drop'));
      }
      await forgetDroppedAliases(redis); // the index's aliases went with it
      return dropped;
    }
    case 'search.describe': {
      arity(rest, 1, name);
      const reply = await info(redis, rest[0] as string);
      return reply === null ? null : describeReply(schemaFromInfo(reply));
    }
    case 'search.query':
    case 'search.count': {
      if (rest.length < 2) throw bad(`wrong number of arguments for '${name}' command`);
      const index = rest[0] as string;
      const request = parseQuery(rest.slice(1));
      // Upstash answers a query of an index that does not exist with nil, and its count with -1.
      const found = await info(redis, index);
      if (found === null) return name === 'search.count' ? -1 : null;
      const schema = schemaFromInfo(found);
      if (name === 'search.query') return queryHits(redis, index, request, schema);
      const filter = translateFilter(request, schema, await dateValuesOf(redis, index, dateFieldsToRead(request.filter, schema, true)));
      if (filter.ranges.length > 0) return fullSearch(index, request, schema, filter, (ft) => redis.run(ft), true);
      return num(list(await redis.run(ftCountArgs(index, request, schema, filter.query)))[0]);
    }
    case 'search.aggregate': {
      // `index filter aggregations [LIMIT n]`: with LIMIT (newer @upstash/redis), the first n matches come too.
      if (rest.length !== 3 && rest.length !== 5) throw bad(`wrong number of arguments for '${name}' command`);
      if (rest.length === 5 && (rest[3] as string).toUpperCase() !== 'LIMIT') throw bad(`SEARCH.AGGREGATE: unknown option '${rest[3]}'`);
      const [index, filterText, aggregationsText] = rest as [string, string, string];
      let filter: unknown;
      let aggregations: unknown;
      try {
        filter = JSON.parse(filterText);
        aggregations = JSON.parse(aggregationsText);
      } catch {
        throw bad('SEARCH.AGGREGATE: the filter and the aggregations must be valid JSON');
      }
      if (typeof aggregations !== 'object' || aggregations === null || Array.isArray(aggregations) || Object.keys(aggregations).length === 0) {
        throw bad('SEARCH.AGGREGATE: aggregations must be a non-empty object');
      }
      const schema = await schemaOf(redis, index);
      const query = filterToQuery(filter, schema, undefined, await dateValuesOf(redis, index, dateFieldsToRead(filter, schema, false)));
      const out = await runAggregations((ft) => redis.run(ft), index, query, aggregations as Record<string, unknown>, schema);
      if (rest.length === 3) return out;
      return [out, await queryHits(redis, index, parseQuery([filterText, 'LIMIT', rest[4] as string]), schema)];
    }
    case 'search.waitindexing': {
      arity(rest, 1, name);
      const deadline = Date.now() + WAIT_INDEXING_MS;
      for (;;) {
        const reply = await info(redis, rest[0] as string);
        if (reply === null) return 0; // as Upstash: no index, nothing indexed
        if (text(pairs(reply).get('indexing')) !== '1') return 1;
        if (Date.now() > deadline) return 0;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    }
    case 'search.aliasadd':
      arity(rest, 2, name);
      return addAlias(redis, rest[0] as string, rest[1] as string);
    case 'search.aliasdel':
      arity(rest, 1, name);
      return deleteAlias(redis, rest[0] as string);
    case 'search.listaliases':
      arity(rest, 0, name);
      return listAliases(redis);
    case 'search.listindexes': {
      const request = parseListIndexes(rest);
      const names = pageOf(list(await redis.run(['FT._LIST'])).map((n) => text(n)), request);
      const infos = new Map<string, Reply | null>();
      for (const index of names) infos.set(index, await info(redis, index));
      return listIndexesReply(names, infos);
    }
    default:
      throw bad(`unknown command '${text(args[0])}'`);
  }
}
