import type { Reply } from '@restash/kv/util-command';
import { bad, list, pairs, text } from './reply';
import { streamIndexPrefix, streamOfIndex } from './stream-index';
import { shadowPrefixes, stringPrefixesOf } from './string-index';

/** Upstash Search field types (`@upstash/redis` FIELD_TYPES). */
export const FIELD_TYPES = ['TEXT', 'U64', 'I64', 'F64', 'BOOL', 'DATE', 'KEYWORD', 'FACET'] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

/** Languages of Upstash Search's `LANGUAGE` option (the SDK's `Language` type). */
export const LANGUAGES = [
  'english', 'arabic', 'danish', 'dutch', 'finnish', 'french', 'german', 'greek', 'hungarian', 'italian',
  'norwegian', 'portuguese', 'romanian', 'russian', 'spanish', 'swedish', 'tamil', 'turkish',
] as const;

/** One field of an index: its dotted path (the attribute name), type and options, as SEARCH.CREATE sends them. */
export interface SearchField {
  path: string;
  type: FieldType;
  fast?: boolean;
  noTokenize?: boolean;
  noStem?: boolean;
  /** The source field (hash field or dotted JSON path) when it differs from `path` (`FROM`). */
  from?: string;
}

/** How a field is indexed in RediSearch, which decides the query syntax that reaches it. */
export type FieldKind = 'text' | 'numeric' | 'tag';

/** An index as Upstash describes it (SEARCH.DESCRIBE). */
export interface IndexSchema {
  name: string;
  /**
   * `string`: string keys holding JSON, indexed through their JSON shadows (string-index.ts); `stream`: the entries of
   * one stream, through a hash shadow of each (stream-index.ts).
   */
  dataType: 'hash' | 'json' | 'string' | 'stream';
  /** The key prefixes; of a stream index, the stream's key. */
  prefixes: string[];
  language?: string;
  fields: SearchField[];
}

/** SEARCH.CREATE parsed. */
export interface CreateRequest extends IndexSchema {
  skipInitialScan: boolean;
  existsOk: boolean;
}

/**
 * The marker of the `PAYLOAD_FIELD` that carries the Upstash schema of an index: RediSearch keeps it in the
 * index definition (FT.INFO `payload_field`), so SEARCH.DESCRIBE can give back U64/I64/F64, KEYWORD/FACET/BOOL/DATE
 * and FROM, which RediSearch's own types (NUMERIC, TAG) lose, without any key in the tenant's keyspace.
 */
export const META_PREFIX = '__restash_search:';

/** The RediSearch kind of a field: TEXT is full-text unless NOTOKENIZE; numbers NUMERIC; everything else TAG. */
export function fieldKind(field: SearchField): FieldKind {
  if (field.type === 'TEXT') return field.noTokenize ? 'tag' : 'text';
  if (field.type === 'U64' || field.type === 'I64' || field.type === 'F64') return 'numeric';
  return 'tag';
}

function isFieldType(value: string): value is FieldType {
  return (FIELD_TYPES as readonly string[]).includes(value);
}

/**
 * Parses the arguments of `SEARCH.CREATE` (after the command name), as `@upstash/redis` builds them:
 * `name [SKIPINITIALSCAN] [EXISTSOK] ON HASH|JSON|STRING PREFIX n p… | ON STREAM key) [LANGUAGE l] SCHEMA
 * (path TYPE [FAST] [NOTOKENIZE] [NOSTEM] [FROM source])…`.
 * @throws KvError 400 for wrong arity, an unknown type/option/language, a hash index without PREFIX
 */
export function parseCreate(args: string[]): CreateRequest {
  let i = 0;
  const next = (what: string): string => {
    const value = args[i++];
    if (value === undefined) throw bad(`SEARCH.CREATE: missing ${what}`);
    return value;
  };
  const name = next('index name');
  if (name === '') throw bad('SEARCH.CREATE: the index name must not be empty');
  let skipInitialScan = false;
  let existsOk = false;
  for (;;) {
    const word = next('ON').toUpperCase();
    if (word === 'SKIPINITIALSCAN') skipInitialScan = true;
    else if (word === 'EXISTSOK') existsOk = true;
    else if (word === 'ON') break;
    else throw bad(`SEARCH.CREATE: unexpected argument '${args[i - 1]}'`);
  }
  const source = next('data type').toUpperCase();
  const dataTypes: Record<string, IndexSchema['dataType']> = { HASH: 'hash', JSON: 'json', STRING: 'string', STREAM: 'stream' };
  const dataType = dataTypes[source];
  if (dataType === undefined) throw bad(`SEARCH.CREATE: unknown data type '${args[i - 1]}'`);
  const prefixes: string[] = [];
  if (dataType === 'stream') {
    const stream = next('stream key');
    if (stream === '') throw bad('SEARCH.CREATE: the stream key must not be empty');
    prefixes.push(stream);
  }
  let word = next('SCHEMA');
  if (word.toUpperCase() === 'PREFIX' && dataType !== 'stream') {
    const count = Number(next('prefix count'));
    if (!Number.isInteger(count) || count < 1) throw bad('SEARCH.CREATE: PREFIX needs a count of at least 1');
    for (let k = 0; k < count; k++) prefixes.push(next('prefix'));
    word = next('SCHEMA');
  }
  let language: string | undefined;
  if (word.toUpperCase() === 'LANGUAGE') {
    language = next('language').toLowerCase();
    if (!(LANGUAGES as readonly string[]).includes(language)) throw bad(`SEARCH.CREATE: unknown language '${language}'`);
    word = next('SCHEMA');
  }
  if (word.toUpperCase() !== 'SCHEMA') throw bad(`SEARCH.CREATE: expected SCHEMA, got '${word}'`);
  const fields: SearchField[] = [];
  while (i < args.length) {
    const path = next('field path');
    const type = next('field type').toUpperCase();
    if (path === '') throw bad('SEARCH.CREATE: a field path must not be empty');
    if (!isFieldType(type)) throw bad(`SEARCH.CREATE: unknown field type '${args[i - 1]}' for '${path}'`);
    if (fields.some((f) => f.path === path)) throw bad(`SEARCH.CREATE: duplicate field '${path}'`);
    const field: SearchField = { path, type };
    for (;;) {
      const option = args[i]?.toUpperCase();
      if (option === 'FAST' && type !== 'TEXT' && type !== 'KEYWORD' && type !== 'FACET') field.fast = true;
      else if (option === 'NOTOKENIZE' && type === 'TEXT') field.noTokenize = true;
      else if (option === 'NOSTEM' && type === 'TEXT') field.noStem = true;
      else if (option === 'FROM' && args[i + 1] !== undefined && field.from === undefined) {
        field.from = args[i + 1];
        i++;
      } else break;
      i++;
    }
    if (type === 'U64' || type === 'I64' || type === 'F64') field.fast = true;
    fields.push(field);
  }
  if (fields.length === 0) throw bad('SEARCH.CREATE: the schema needs at least one field');
  if (dataType === 'hash' && prefixes.length === 0) throw bad('SEARCH.CREATE: PREFIX is required');
  return { name, dataType, prefixes, language, fields, skipInitialScan, existsOk };
}

/** A dotted path as a JSONPath: `a.b` → `$.a.b`, segments outside `[A-Za-z_][A-Za-z0-9_]*` in brackets. */
export function jsonPath(dotted: string): string {
  return (
    '$' +
    dotted
      .split('.')
      .map((part) => (/^[A-Za-z_][A-Za-z0-9_]*$/.test(part) ? `.${part}` : `[${JSON.stringify(part)}]`))
      .join('')
  );
}

/** The schema options of a field as Upstash lists them (SEARCH.CREATE order, DESCRIBE field entries). */
function fieldOptions(field: SearchField): string[] {
  const out: string[] = [];
  if (field.fast) out.push('FAST');
  if (field.noTokenize) out.push('NOTOKENIZE');
  if (field.noStem) out.push('NOSTEM');
  if (field.from !== undefined) out.push('FROM', field.from);
  return out;
}

/** The separator of every TAG field: a control character, so a value is one tag (Upstash keywords are whole values). */
export const TAG_SEPARATOR = '\x1f';

/**
 * `FT.CREATE` arguments for a parsed SEARCH.CREATE: `ON HASH|JSON PREFIX …` (a string index: ON JSON over the
 * shadows' prefixes, string-index.ts shadowPrefixes; a stream index: ON HASH over its entries' shadows,
 * stream-index.ts streamIndexPrefix), the Upstash schema in
 * PAYLOAD_FIELD (see META_PREFIX), `LANGUAGE`, and one attribute per field named by its dotted path:
 * TEXT → TEXT [NOSTEM] (NOTOKENIZE → TAG CASESENSITIVE); U64/I64/F64 → NUMERIC SORTABLE; BOOL → TAG;
 * DATE, KEYWORD, FACET → TAG CASESENSITIVE; FAST → SORTABLE.
 */
export function ftCreateArgs(request: CreateRequest): string[] {
  const meta = JSON.stringify({ l: request.language, f: request.fields.map((f) => [f.path, f.type, ...fieldOptions(f)]) });
  const string = request.dataType === 'string';
  const stream = request.dataType === 'stream';
  const out = ['FT.CREATE', request.name, 'ON', string ? 'JSON' : stream ? 'HASH' : request.dataType.toUpperCase()];
  const prefixes = string ? shadowPrefixes(request.prefixes) : stream ? request.prefixes.map(streamIndexPrefix) : request.prefixes;
  if (prefixes.length > 0) out.push('PREFIX', String(prefixes.length), ...prefixes);
  if (request.language) out.push('LANGUAGE', request.language);
  out.push('PAYLOAD_FIELD', META_PREFIX + meta);
  // The initial scan of a string or stream index is the gateway's (syncPrefixes, a stream sync): no shadow exists yet.
  if (request.skipInitialScan && !string && !stream) out.push('SKIPINITIALSCAN');
  out.push('SCHEMA');
  for (const field of request.fields) {
    const source = field.from ?? field.path;
    out.push(request.dataType === 'hash' || stream ? source : jsonPath(source), 'AS', field.path);
    const kind = fieldKind(field);
    if (kind === 'text') out.push('TEXT', ...(field.noStem ? ['NOSTEM'] : []));
    else if (kind === 'numeric') out.push('NUMERIC');
    else out.push('TAG', 'SEPARATOR', TAG_SEPARATOR, ...(field.type === 'BOOL' ? [] : ['CASESENSITIVE']));
    if (kind === 'numeric' || field.fast || field.type === 'KEYWORD') out.push('SORTABLE');
  }
  return out;
}

const FROM_REDISEARCH: Record<string, FieldType> = { TEXT: 'TEXT', NUMERIC: 'F64', TAG: 'KEYWORD' };

/**
 * The Upstash view of an index from its `FT.INFO` reply (an ON JSON index over shadow prefixes is a string index,
 * string-index.ts; an ON HASH index over one stream's shadows a stream index, stream-index.ts): the schema stored by
 * SEARCH.CREATE when present,
 * otherwise one guessed from RediSearch's attribute types (an index made with FT.CREATE directly):
 * TEXT → TEXT, NUMERIC → F64, TAG → KEYWORD; other attribute types (GEO, VECTOR …) are left out.
 */
export function schemaFromInfo(info: Reply): IndexSchema {
  const top = pairs(info);
  const definition = pairs(top.get('index_definition'));
  const ftPrefixes = list(definition.get('prefixes')).map((p) => text(p));
  const json = text(definition.get('key_type')).toLowerCase() === 'json';
  const stringPrefixes = json ? stringPrefixesOf(ftPrefixes) : undefined;
  const stream = json ? undefined : streamOfIndex(ftPrefixes);
  const dataType = stringPrefixes ? 'string' : json ? 'json' : stream !== undefined ? 'stream' : 'hash';
  const prefixes = stringPrefixes ? stringPrefixes.filter((p) => p !== '') : stream !== undefined ? [stream] : ftPrefixes;
  const payload = text(definition.get('payload_field'));
  const name = text(top.get('index_name'));
  if (payload.startsWith(META_PREFIX)) {
    const meta = JSON.parse(payload.slice(META_PREFIX.length)) as { l?: string; f: string[][] };
    const fields = meta.f.map(([path, type, ...options]) => {
      const field: SearchField = { path: path as string, type: type as FieldType };
      for (let k = 0; k < options.length; k++) {
        if (options[k] === 'FAST') field.fast = true;
        else if (options[k] === 'NOTOKENIZE') field.noTokenize = true;
        else if (options[k] === 'NOSTEM') field.noStem = true;
        else if (options[k] === 'FROM') field.from = options[++k];
      }
      return field;
    });
    return { name, dataType, prefixes, language: meta.l, fields };
  }
  const fields: SearchField[] = [];
  for (const attribute of list(top.get('attributes'))) {
    const flags = list(attribute).map((a) => (Array.isArray(a) ? '' : text(a)));
    const at = (key: string): string => flags[flags.indexOf(key) + 1] ?? '';
    const type = FROM_REDISEARCH[at('type')];
    if (!type) continue;
    const field: SearchField = { path: at('attribute'), type };
    if (type === 'TEXT' && flags.includes('NOSTEM')) field.noStem = true;
    if (type === 'F64') field.fast = true;
    fields.push(field);
  }
  const language = text(definition.get('default_language')) || undefined;
  return { name, dataType, prefixes, language, fields };
}

/**
 * SEARCH.DESCRIBE's reply, as `@upstash/redis` parses it: `["name", n, "type", "HASH"|"JSON"|"STRING"|"STREAM", "prefixes", […],
 * ("language", l,) "schema", [[path, TYPE, options…], …]]`.
 */
export function describeReply(schema: IndexSchema): Reply {
  const out: Reply[] = ['name', schema.name, 'type', schema.dataType.toUpperCase(), 'prefixes', [...schema.prefixes]];
  if (schema.language) out.push('language', schema.language);
  out.push('schema', schema.fields.map((f): Reply => [f.path, f.type, ...fieldOptions(f)]));
  return out;
}
