import { KvError, type Reply } from '@restash/kv/util-command';
import { MAX_AGGREGATE_COMMANDS, planAggregation, runAggregations } from './aggregate';
import { type DateRange, MAX_DATE_VALUES, dateFieldsToRead, escapeTag, filterToQuery, inDateRanges, textTokens } from './filter';
import { ftSearchArgs, highlightTagFields, parseQuery, searchReply } from './query';
import { list } from './reply';
import { describeReply, ftCreateArgs, parseCreate, schemaFromInfo, type IndexSchema } from './schema';
import { isSearchCommand, isSearchWrite, runSearchCommand, wire } from './search';

const schema: IndexSchema = {
  name: 'p',
  dataType: 'json',
  prefixes: ['p:'],
  fields: [
    { path: 'name', type: 'TEXT' },
    { path: 'cat', type: 'TEXT', noTokenize: true },
    { path: 'price', type: 'F64', fast: true },
    { path: 'on', type: 'BOOL' },
    { path: 'sku', type: 'KEYWORD' },
    { path: 'when', type: 'DATE' },
    { path: 'a.b', type: 'TEXT' },
  ],
};

function status(fn: () => unknown): number | undefined {
  try {
    fn();
  } catch (error) {
    return error instanceof KvError ? error.status : -1;
  }
  return undefined;
}

describe('filterToQuery', () => {
  it('translates leaves by field kind', () => {
    expect(filterToQuery({}, schema)).toBe('*');
    // A bare text value is smart matching: exact, one edit away, or a prefix, for terms of 3+ letters or digits.
    expect(filterToQuery({ name: 'Laptop Pro' }, schema)).toBe('(@name:((Laptop|%Laptop%|Laptop*) (Pro|%Pro%|Pro*)))');
    expect(filterToQuery({ name: { $smart: 'tv' } }, schema)).toBe('(@name:(tv))');
    expect(filterToQuery({ name: { $eq: 'Laptop Pro' } }, schema)).toBe('(@name:(Laptop Pro))');
    expect(filterToQuery({ price: 5, sku: { $smart: 'x' } }, schema)).toBe('(@price:[5 5]) (@sku:{x})');
    expect(filterToQuery({ price: { $gt: 5 } }, schema)).toBe('(@price:[(5 +inf])');
    expect(filterToQuery({ price: { $lte: -1.5 } }, schema)).toBe('(@price:[-inf -1.5])');
    expect(filterToQuery({ price: { $in: [1, 2] } }, schema)).toBe('((@price:[1 1] | @price:[2 2]))');
    expect(filterToQuery({ on: true }, schema)).toBe('(@on:{true})');
    expect(filterToQuery({ sku: { $in: ['a b', 'c'] } }, schema)).toBe('(@sku:{a\\ b | c})');
    expect(filterToQuery({ 'a.b': { $fuzzy: { value: 'x', distance: 2 } } }, schema)).toBe('(@a\\.b:(%%x%%))');
    expect(filterToQuery({ name: { $phrase: { value: 'a b', slop: 1 } } }, schema)).toBe('(@name:(a b) => { $slop: 1; $inorder: true; })');
    expect(filterToQuery({ name: { $regex: '.*top' } }, schema)).toBe('(@name:(*top))');
    expect(filterToQuery({ name: { $eq: 'x', $boost: 2 } }, schema)).toBe('((@name:(x)) => { $weight: 2; })');
  });

  it('combines boolean nodes', () => {
    expect(filterToQuery({ $or: [{ name: 'a' }, { name: 'b' }] }, schema)).toBe('(((@name:(a))) | ((@name:(b))))');
    expect(filterToQuery({ $must: { name: 'a' }, $should: { name: 'b' }, $mustNot: { cat: 'c' } }, schema)).toBe(
      '((@name:(a))) ~((@name:(b))) -((@cat:{c}))',
    );
  });

  it('escapes every value so that it cannot add query syntax', () => {
    expect(escapeTag('x} | @sku:{y')).toBe('x\\}\\ \\|\\ \\@sku\\:\\{y');
    expect(textTokens('a) | @price:[0 +inf] (b', 'w')).toEqual(['a', '\\|', 'price', '0', 'inf', 'b']);
    expect(textTokens('a/b\\c?', 'w')).toEqual(['a\\/b\\\\c\\?']);
    expect(filterToQuery({ cat: '} -@x:{' }, schema)).toBe('(@cat:{\\}\\ \\-\\@x\\:\\{})');
  });

  it('leaves DATE ranges of the top level and $and/$must to the gateway, which checks them on the matches', () => {
    const ranges: DateRange[] = [];
    expect(filterToQuery({ name: 'x', when: { $gte: '2026-01-01T00:00:00.000Z', $lt: 1767225600000 + 86_400_000 }, $must: [{ when: { $gt: '2025-12-31T23:00:00+01:00' } }] }, schema, ranges)).toBe('(@name:(x))');
    expect(ranges).toEqual([
      { path: 'when', op: '$gte', at: Date.UTC(2026, 0, 1) },
      { path: 'when', op: '$lt', at: Date.UTC(2026, 0, 2) },
      { path: 'when', op: '$gt', at: Date.UTC(2025, 11, 31, 22) },
    ]);
    expect(filterToQuery({ when: { $lte: '2026-01-01T00:00:00Z' } }, schema, [])).toBe('*');
    for (const filter of [{ $or: [{ when: { $gt: '2026-01-01T00:00:00Z' } }] }, { $mustNot: [{ when: { $gt: 0 } }] }, { when: { $gt: 'yesterday' } },
      // A DATE leaf with nothing but $boost has no condition, even when another leaf of the field has a range.
      { $and: [{ when: { $gt: 0 } }, { when: { $boost: 2 } }] }]) {
      expect([filter, status(() => filterToQuery(filter, schema, []))]).toEqual([filter, 400]);
    }
    const at = (when: string) => inDateRanges(ranges, new Map([['when', when]]));
    expect(at('2026-01-01T00:00:00.000Z')).toBe(true);
    expect(at('2026-01-01T23:59:59.999Z')).toBe(true);
    expect(at('2026-01-02T00:00:00Z')).toBe(false);
    expect(at('2025-12-31T23:59:59Z')).toBe(false);
    expect(at(String(Date.UTC(2026, 0, 1, 12)))).toBe(true);
    expect(at('not a date')).toBe(false);
    expect(inDateRanges(ranges, new Map())).toBe(false);
  });

  it('makes a DATE range that cannot be collected (in $or, $should, $mustNot, aggregations) the union of the values in range', () => {
    const filter = { $or: [{ when: { $gte: '2026-01-01T00:00:00Z', $lt: '2026-02-01T00:00:00Z' } }, { name: 'x' }], $mustNot: [{ when: { $gt: 0 } }] };
    expect(dateFieldsToRead(filter, schema, true)).toEqual(['when']);
    expect(dateFieldsToRead({ when: { $gt: 0 }, $and: [{ when: { $lt: 5 } }] }, schema, true)).toEqual([]);
    expect(dateFieldsToRead({ when: { $gt: 0 } }, schema, false)).toEqual(['when']);
    expect(dateFieldsToRead({ $or: [{ when: '2026-01-01T00:00:00Z' }] }, schema, true)).toEqual([]);
    const values = new Map([['when', ['2025-12-31T23:59:59Z', '2026-01-01T00:00:00Z', '2026-01-15T12:00:00+01:00', '2026-02-01T00:00:00Z']]]);
    expect(filterToQuery(filter, schema, [], values)).toBe(
      '(((@when:{2026\\-01\\-01T00\\:00\\:00Z | 2026\\-01\\-15T12\\:00\\:00\\+01\\:00})) | ((@name:(x)))) -((@when:{2025\\-12\\-31T23\\:59\\:59Z | 2026\\-01\\-01T00\\:00\\:00Z | 2026\\-01\\-15T12\\:00\\:00\\+01\\:00 | 2026\\-02\\-01T00\\:00\\:00Z}))',
    );
    // No value in range: a clause that matches nothing.
    expect(filterToQuery({ $or: [{ when: { $gt: '2030-01-01T00:00:00Z' } }] }, schema, [], values)).toBe('((((@when:{none} -@when:{none}))))');
    const many = new Map([['when', Array.from({ length: MAX_DATE_VALUES + 1 }, (_, i) => String(i))]]);
    expect(status(() => filterToQuery({ $or: [{ when: { $gte: 0 } }] }, schema, [], many))).toBe(400);
  });

  it('answers 400 for bad filters', () => {
    for (const filter of [
      [], { nope: 1 }, { $nope: [] }, { name: { $gt: 1 } }, { price: 'x' }, { price: { $gt: Infinity } }, { sku: { $lt: 'a' } },
      { when: { $gte: '2024' } }, { on: 'yes' }, { name: { $regex: '(a|b)' } }, { name: '...' }, { $or: [] }, { name: { $fuzzy: { value: 'x', distance: 4 } } },
    ]) {
      expect([filter, status(() => filterToQuery(filter, schema))]).toEqual([filter, 400]);
    }
  });
});

describe('SEARCH.CREATE', () => {
  it('parses the SDK arguments and builds FT.CREATE with the Upstash schema kept for DESCRIBE', () => {
    const request = parseCreate(['p', 'EXISTSOK', 'ON', 'JSON', 'PREFIX', '1', 'p:', 'LANGUAGE', 'turkish', 'SCHEMA', 'name', 'TEXT', 'NOSTEM', 'n', 'U64', 'FAST', 'x', 'TEXT', 'FROM', 'a.b c']);
    expect(request).toMatchObject({ name: 'p', existsOk: true, dataType: 'json', language: 'turkish' });
    const args = ftCreateArgs(request);
    expect(args.slice(0, 8)).toEqual(['FT.CREATE', 'p', 'ON', 'JSON', 'PREFIX', '1', 'p:', 'LANGUAGE']);
    expect(args.slice(args.indexOf('SCHEMA'))).toEqual(['SCHEMA', '$.name', 'AS', 'name', 'TEXT', 'NOSTEM', '$.n', 'AS', 'n', 'NUMERIC', 'SORTABLE', '$.a["b c"]', 'AS', 'x', 'TEXT']);
    const payload = args[args.indexOf('PAYLOAD_FIELD') + 1] as string;
    const info = ['index_name', 'p', 'index_definition', ['key_type', 'JSON', 'prefixes', ['p:'], 'payload_field', payload], 'attributes', []];
    expect(describeReply(schemaFromInfo(info))).toEqual([
      'name', 'p', 'type', 'JSON', 'prefixes', ['p:'], 'language', 'turkish',
      'schema', [['name', 'TEXT', 'NOSTEM'], ['n', 'U64', 'FAST'], ['x', 'TEXT', 'FROM', 'a.b c']],
    ]);
  });

  it('makes a string index an index ON JSON over the shadows, described as a string index', () => {
    const request = parseCreate(['s', 'SKIPINITIALSCAN', 'ON', 'STRING', 'PREFIX', '2', 'a:', 'b:', 'SCHEMA', 'author.name', 'TEXT']);
    expect(request).toMatchObject({ dataType: 'string', prefixes: ['a:', 'b:'], skipInitialScan: true });
    const args = ftCreateArgs(request);
    expect(args.slice(0, 7)).toEqual(['FT.CREATE', 's', 'ON', 'JSON', 'PREFIX', '2', '__restash_string:a:']);
    // The scan of existing keys is the gateway's: RediSearch's would find no shadows.
    expect(args).not.toContain('SKIPINITIALSCAN');
    expect(args.slice(args.indexOf('SCHEMA'))).toEqual(['SCHEMA', '$.author.name', 'AS', 'author.name', 'TEXT']);
    const payload = args[args.indexOf('PAYLOAD_FIELD') + 1] as string;
    const info = (prefixes: string[]) => ['index_name', 's', 'index_definition', ['key_type', 'JSON', 'prefixes', prefixes, 'payload_field', payload], 'attributes', []];
    expect(schemaFromInfo(info(['__restash_string:a:', '__restash_string:b:']))).toMatchObject({ dataType: 'string', prefixes: ['a:', 'b:'] });
    expect(describeReply(schemaFromInfo(info(['__restash_string:a:'])))).toEqual(['name', 's', 'type', 'STRING', 'prefixes', ['a:'], 'schema', [['author.name', 'TEXT']]]);
    // Without PREFIX: every key, through the bare shadow prefix.
    const all = ftCreateArgs(parseCreate(['s', 'ON', 'STRING', 'SCHEMA', 'a', 'TEXT']));
    expect(all.slice(4, 7)).toEqual(['PREFIX', '1', '__restash_string:']);
    expect(schemaFromInfo(info(['__restash_string:']))).toMatchObject({ dataType: 'string', prefixes: [] });
    // A JSON index whose prefixes are not all shadows' stays a JSON index.
    expect(schemaFromInfo(info(['__restash_string:a:', 'x:']))).toMatchObject({ dataType: 'json' });
  });

  it('answers 400 for what it cannot create', () => {
    for (const args of [[], ['p'], ['p', 'ON', 'STREAM', 'PREFIX', '1', 's:', 'SCHEMA', 'a', 'TEXT'], ['p', 'ON', 'HASH', 'PREFIX', '1', 'h:', 'SCHEMA', 'a', 'VECTOR'], ['p', 'ON', 'HASH', 'PREFIX', '1', 'h:', 'SCHEMA'], ['p', 'ON', 'HASH', 'PREFIX', 'x', 'SCHEMA', 'a', 'TEXT']]) {
      expect([args, status(() => parseCreate(args))]).toEqual([args, 400]);
    }
  });
});

describe('SEARCH.QUERY', () => {
  it('builds FT.SEARCH and reshapes its reply', () => {
    const request = parseQuery(['{"name":"x"}', 'LIMIT', '5', 'OFFSET', '2', 'ORDERBY', 'price', 'DESC', 'HIGHLIGHT', 'FIELDS', '1', 'name', 'TAGS', '<', '>', 'SELECT', '1', 'name']);
    expect(ftSearchArgs('p', request, schema)).toEqual([
      'FT.SEARCH', 'p', '(@name:(x))', 'WITHSCORES', 'RETURN', '1', 'name', 'HIGHLIGHT', 'FIELDS', '1', 'name', 'TAGS', '<', '>', 'SORTBY', 'price', 'DESC', 'LIMIT', '2', '5',
    ]);
    expect(searchReply(['2', Buffer.from('k1'), '1.5', ['name', 'a'], Buffer.from('k2'), '1', []], false)).toEqual([
      [Buffer.from('k1'), '1.5', [['name', 'a']]],
      [Buffer.from('k2'), '1', []],
    ]);
    expect(searchReply(['1', 'k1', '2'], true)).toEqual([['k1', '2']]);
    for (const args of [['{'], ['{}', 'LIMIT', '-1'], ['{}', 'SCOREFUNC'], ['{}', 'ORDERBY', 'a', 'ASC', 'SCOREFUNC', 'FIELDVALUE', 'x'], ['{}', 'BOGUS'], ['{}', 'LIMIT', '10001']]) {
      expect([args, status(() => parseQuery(args))]).toEqual([args, 400]);
    }
  });

  it('highlights keyword-like fields whole where the filter matched their value; RediSearch highlights only text', () => {
    const request = parseQuery(['{"$or":[{"cat":"tv"},{"sku":{"$in":["A","B"]}}],"$mustNot":[{"cat":"radio"}]}', 'HIGHLIGHT', 'FIELDS', '2', 'cat', 'sku', 'SELECT', '2', 'cat', 'sku']);
    expect(ftSearchArgs('p', request, schema)).not.toContain('HIGHLIGHT');
    const hits = [
      ['k1', '1', [['cat', Buffer.from('tv')], ['sku', Buffer.from('C')]]],
      ['k2', '1', [['cat', Buffer.from('radio')], ['sku', Buffer.from('B')]]],
    ];
    expect(JSON.stringify(highlightTagFields(hits, request, schema))).toBe(
      JSON.stringify([
        ['k1', '1', [['cat', Buffer.from('<em>tv</em>')], ['sku', Buffer.from('C')]]],
        ['k2', '1', [['cat', Buffer.from('radio')], ['sku', Buffer.from('<em>B</em>')]]],
      ]),
    );
    const mixed = parseQuery(['{"name":"x"}', 'HIGHLIGHT', 'FIELDS', '2', 'name', 'cat']);
    expect(ftSearchArgs('p', mixed, schema)).toContain('HIGHLIGHT');
    expect(ftSearchArgs('p', mixed, schema).join(' ')).toContain('HIGHLIGHT FIELDS 1 name');
  });
});

describe('SEARCH.AGGREGATE', () => {
  it('plans a terms aggregation and formats its rows', () => {
    const plan = planAggregation('p', '*', 't', { $terms: { field: 'sku', size: 1 } }, schema);
    expect(plan.commands).toEqual([['FT.AGGREGATE', 'p', '*', 'LOAD', '3', '@sku', 'AS', '__f0', 'FILTER', 'exists(@__f0)', 'GROUPBY', '1', '@__f0', 'REDUCE', 'COUNT', '0', 'AS', '__r0']]);
    expect(plan.format([['2', ['__f0', 'a', '__r0', '1'], ['__f0', 'b', '__r0', '3']]])).toEqual([
      'buckets', [['key', 'b', 'docCount', 3]], 'sumOtherDocCount', 1, 'docCountErrorUpperBound', 0,
    ]);
  });

  it('plans nested bucket aggregations, and answers 400 for unknown ones or what cannot nest', () => {
    expect(status(() => planAggregation('p', '*', 'x', { $median: { field: 'price' } }, schema))).toBe(400);
    expect(planAggregation('p', '*', 'x', { $terms: { field: 'sku' }, $aggs: { y: { $range: { field: 'price', ranges: [{ to: 5 }] } } } }, schema).nested?.aggregations).toEqual([
      ['y', { $range: { field: 'price', ranges: [{ to: 5 }] } }],
    ]);
    expect(status(() => planAggregation('p', '*', 'x', { $terms: { field: 'name' }, $aggs: { y: { $terms: { field: 'sku' } } } }, schema))).toBe(400);
    expect(status(() => planAggregation('p', '*', 'x', { $facet: { field: 'sku' }, $aggs: { y: { $terms: { field: 'sku' } } } }, schema))).toBe(400);
    expect(status(() => planAggregation('p', '*', 'x', { $avg: { field: 'sku' } }, schema))).toBe(400);
  });
});

describe('runAggregations', () => {
  it('runs nested bucket aggregations once per bucket with its condition, and stops past MAX_AGGREGATE_COMMANDS', async () => {
    const sent: string[] = [];
    const skus = (n: number): Reply => [String(n), ...Array.from({ length: n }, (_, i): Reply => ['__f0', `s${i}`, '__r0', '1'])];
    const run = async (args: string[]): Promise<Reply> => {
      sent.push(args[2] as string);
      return skus(2);
    };
    const spec = { $terms: { field: 'sku' }, $aggs: { inner: { $terms: { field: 'sku' } } } };
    const out = await runAggregations(run, 'p', '@on:{true}', { t: spec }, schema);
    expect(sent).toEqual(['@on:{true}', '(@on:{true}) @sku:{s0}', '(@on:{true}) @sku:{s1}']);
    expect(list(list(out[1])[1]).map((bucket) => list(bucket).slice(0, 4))).toEqual([['key', 's0', 'docCount', 1], ['key', 's1', 'docCount', 1]]);
    expect(list(list(list(out[1])[1])[0])[5]).toEqual(['buckets', [['key', 's0', 'docCount', 1], ['key', 's1', 'docCount', 1]], 'sumOtherDocCount', 0, 'docCountErrorUpperBound', 0]);

    sent.length = 0;
    const wide = async (args: string[]): Promise<Reply> => {
      sent.push(args[2] as string);
      return skus(40);
    };
    const deep = { $terms: { field: 'sku', size: 40 }, $aggs: { a: { $terms: { field: 'sku', size: 40 }, $aggs: { b: { $terms: { field: 'sku' } } } } } };
    await expect(runAggregations(wide, 'p', '*', { t: deep }, schema)).rejects.toThrow(`needs more than ${MAX_AGGREGATE_COMMANDS} queries`);
    expect(sent).toHaveLength(MAX_AGGREGATE_COMMANDS);
    // Every aggregation is checked before anything runs.
    sent.length = 0;
    await expect(runAggregations(wide, 'p', '*', { t: { $terms: { field: 'sku' }, $aggs: { a: { $terms: { field: 'nope' } } } } }, schema)).rejects.toThrow("unknown field 'nope'");
    expect(sent).toEqual([]);
  });
});

describe('runSearchCommand', () => {
  const never = { run: () => Promise.reject(new Error('not called')) };

  it('classifies names and refuses servers without the Query Engine or on another logical db', async () => {
    expect(isSearchCommand('search.query')).toBe(true);
    expect(isSearchCommand('ft.search')).toBe(false);
    expect(isSearchWrite('search.create')).toBe(true);
    expect(isSearchWrite('search.query')).toBe(false);
    await expect(runSearchCommand(['SEARCH.QUERY', 'p', '{}'], never, { queryEngine: false })).rejects.toThrow('has no Redis Query Engine');
    await expect(runSearchCommand(['SEARCH.QUERY', 'p', '{}'], never, { queryEngine: true, db: 2 })).rejects.toThrow('only logical database 0');
    await expect(runSearchCommand(['SEARCH.NOPE'], never, { queryEngine: true })).rejects.toThrow("unknown command 'SEARCH.NOPE'");
    expect(wire(['a', 1, null, ['b']])).toEqual([Buffer.from('a'), 1, null, [Buffer.from('b')]]);
  });
  it.each([
    ['SEARCH.DROP', 'FT.DROPINDEX', 'Unknown index name'],
    ['SEARCH.ALIASDEL', 'FT.ALIASDEL', 'Alias does not exist'],
  ])('%s: 1 once %s removed it, 0 when there was none, other failures thrown', async (command, ft, missing) => {
    const sent: string[][] = [];
    // The FT command fails as given; the alias dictionary is empty.
    const answering = (failure?: Error) => ({
      run: (args: string[]) => {
        sent.push(args);
        if (args[0] === ft && failure) return Promise.reject(failure);
        return Promise.resolve(args[0] === 'FT.DICTDUMP' ? [] : 'OK');
      },
    });
    const options = { queryEngine: true };
    expect(await runSearchCommand([command, 'p'], answering(), options)).toBe(1);
    expect(sent).toContainEqual([ft, 'p']);
    expect(await runSearchCommand([command, 'p'], answering(new Error(missing)), options)).toBe(0);
    await expect(runSearchCommand([command, 'p'], answering(new Error('LOADING')), options)).rejects.toThrow('LOADING');
  });
});
