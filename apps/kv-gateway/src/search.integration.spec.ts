import type { Redis } from '@upstash/redis';
import { KV_TEST_ENGINE as engine, acmeDatabase } from './testing/upstash-redis';

const products = [
  { name: 'Laptop Pro', description: 'High performance laptop', category: 'electronics', price: 1299.99, stock: 50, active: true, sku: 'LP-1', added: '2024-01-02T00:00:00Z', path: '/tech/computers/laptops', maker: { name: 'John Doe' } },
  { name: 'Laptop Basic', description: 'Budget friendly laptop', category: 'electronics', price: 599.99, stock: 100, active: true, sku: 'LB 2', added: '2024-02-02T00:00:00Z', path: '/tech/computers/laptops', maker: { name: 'Jane Roe' } },
  { name: 'Wireless Mouse', description: 'Ergonomic wireless mouse', category: 'electronics', price: 29.99, stock: 200, active: false, sku: 'WM|3', added: '2024-03-02T00:00:00Z', path: '/tech/accessories', maker: { name: 'John Smith' } },
  { name: 'Phone Case', description: 'Protective phone case', category: 'accessories', price: 19.99, stock: 300, active: true, sku: 'LP-1', added: '2024-04-02T00:00:00Z', path: '/home', maker: { name: 'Ann' } },
];

const schema = {
  name: 'TEXT',
  description: { type: 'TEXT', noStem: true },
  category: { type: 'TEXT', noTokenize: true },
  price: { type: 'F64', fast: true },
  stock: { type: 'U64', fast: true },
  active: 'BOOL',
  sku: 'KEYWORD',
  added: { type: 'DATE', fast: true },
  path: 'FACET',
  maker: { name: 'TEXT' },
  summary: { type: 'TEXT', from: 'description' },
} as const;

/**
 * Upstash Search (`redis.search`, SEARCH.*) of @upstash/redis 1.39.0 through a real kv-gateway, translated onto
 * RediSearch on the tenant's own server: JSON and hash indexes with every field type, filters, sorting, paging,
 * count, aggregations, describe, aliases, drop and waitIndexing. On Valkey (no Query Engine) every SEARCH.*
 * answers one clear error.
 */
describe(`@upstash/redis search on ${engine}`, () => {
  const acme = acmeDatabase();
  let redis: Redis;
  beforeAll(() => {
    redis = acme.client();
  });

  if (engine === 'valkey') {
    it('answers a clear error: the server has no Redis Query Engine', async () => {
      const message = 'ERR Search is not available on this database (the server has no Redis Query Engine)';
      await expect(redis.search.createIndex({ name: 'p', dataType: 'json', prefix: 'p:', schema: { name: 'TEXT' } })).rejects.toThrow(message);
      await expect(redis.search.index({ name: 'p' }).query({ filter: {} })).rejects.toThrow(message);
      await expect(redis.search.index({ name: 'p' }).describe()).rejects.toThrow(message);
    });
    return;
  }

  it('a JSON index with every field type: create, waitIndexing, describe, query by each type', async () => {
    for (const [i, p] of products.entries()) await redis.json.set(`p:${i}`, '$', p);
    const index = await redis.search.createIndex({ name: 'products', dataType: 'json', prefix: 'p:', schema });
    expect(await index.waitIndexing()).toBe(1);
    expect(await index.describe()).toEqual({
      name: 'products',
      dataType: 'json',
      prefixes: ['p:'],
      schema: {
        name: { type: 'TEXT' },
        description: { type: 'TEXT', noStem: true },
        category: { type: 'TEXT', noTokenize: true },
        price: { type: 'F64', fast: true },
        stock: { type: 'U64', fast: true },
        active: { type: 'BOOL' },
        sku: { type: 'KEYWORD' },
        added: { type: 'DATE', fast: true },
        path: { type: 'FACET' },
        'maker.name': { type: 'TEXT' },
        summary: { type: 'TEXT', from: 'description' },
      },
    });
    expect(await redis.search.index({ name: 'nope' }).describe()).toBeNull();

    const keys = async (filter: Record<string, unknown>): Promise<string[]> =>
      (await index.query({ filter, select: {} })).map((r) => r.key).sort();
    expect(await keys({})).toEqual(['p:0', 'p:1', 'p:2', 'p:3']);
    expect(await keys({ name: 'laptop' })).toEqual(['p:0', 'p:1']);
    // A bare value is smart matching: one typo, or an unfinished word, still matches (Upstash's "Smart Matching").
    expect(await keys({ name: 'lapton' })).toEqual(['p:0', 'p:1']);
    expect(await keys({ name: { $smart: 'lapt' } })).toEqual(['p:0', 'p:1']);
    expect(await keys({ name: { $eq: 'lapton' } })).toEqual([]);
    expect(await keys({ name: { $eq: 'LAPTOP pro' } })).toEqual(['p:0']);
    expect(await keys({ name: { $in: ['mouse', 'case'] } })).toEqual(['p:2', 'p:3']);
    expect(await keys({ name: { $fuzzy: 'laptopp' } })).toEqual(['p:0', 'p:1']);
    expect(await keys({ name: { $fuzzy: { value: 'Lapopp', distance: 2 } } })).toEqual(['p:0', 'p:1']);
    expect(await keys({ description: { $phrase: 'wireless mouse' } })).toEqual(['p:2']);
    expect(await keys({ description: { $phrase: 'mouse wireless' } })).toEqual([]);
    expect(await keys({ description: { $phrase: { value: 'ergonomic mouse', slop: 1 } } })).toEqual(['p:2']);
    expect(await keys({ description: { $phrase: { value: 'wireless mou', prefix: true } } })).toEqual(['p:2']);
    expect(await keys({ name: { $regex: 'Lap.*' } })).toEqual(['p:0', 'p:1']);
    expect(await keys({ price: { $gt: 599.99 } })).toEqual(['p:0']);
    expect(await keys({ price: { $gte: 599.99 } })).toEqual(['p:0', 'p:1']);
    expect(await keys({ stock: { $lt: 100 } })).toEqual(['p:0']);
    expect(await keys({ stock: { $lte: 100 } })).toEqual(['p:0', 'p:1']);
    expect(await keys({ stock: { $in: [50, 300] } })).toEqual(['p:0', 'p:3']);
    expect(await keys({ stock: 200 })).toEqual(['p:2']);
    expect(await keys({ active: false })).toEqual(['p:2']);
    expect(await keys({ active: { $in: [true] } })).toEqual(['p:0', 'p:1', 'p:3']);
    expect(await keys({ category: 'electronics' })).toEqual(['p:0', 'p:1', 'p:2']);
    expect(await keys({ category: 'Electronics' })).toEqual([]);
    expect(await keys({ sku: 'LP-1' })).toEqual(['p:0', 'p:3']);
    expect(await keys({ sku: { $in: ['LB 2', 'WM|3'] } })).toEqual(['p:1', 'p:2']);
    expect(await keys({ added: '2024-03-02T00:00:00Z' })).toEqual(['p:2']);
    // DATE ranges (checked by the gateway on the matches: DATE is a TAG in the Query Engine).
    expect(await keys({ added: { $gte: new Date('2024-02-02T00:00:00Z') as unknown as string, $lt: '2024-04-01T00:00:00.000Z' } })).toEqual(['p:1', 'p:2']);
    expect(await keys({ $must: [{ category: 'electronics' }, { added: { $gt: '2024-02-02T00:00:00Z' } }] })).toEqual(['p:2']);
    expect(await index.count({ filter: { added: { $lte: '2024-02-02T00:00:00Z' } } })).toEqual({ count: 2 });
    const recent = await index.query({ filter: { added: { $gt: '2024-01-15T00:00:00Z' } }, orderBy: { price: 'DESC' }, limit: 2, offset: 1, select: { name: true } });
    expect(recent.map((hit) => [hit.key, hit.data])).toEqual([
      ['p:2', { name: 'Wireless Mouse' }],
      ['p:3', { name: 'Phone Case' }],
    ]);
    // Elsewhere (inside $or, $should, $mustNot, in aggregations) a DATE range is the union of the field's values in range.
    expect(await keys({ $or: [{ added: { $gte: '2024-03-01T00:00:00Z' } }, { sku: 'LP-1' }] })).toEqual(['p:0', 'p:2', 'p:3']);
    expect(await keys({ $mustNot: [{ added: { $lt: '2024-02-02T00:00:00Z' } }] })).toEqual(['p:1', 'p:2', 'p:3']);
    expect(await keys({ $or: [{ added: { $gt: '2030-01-01T00:00:00Z' } }] })).toEqual([]);
    expect(await index.count({ filter: { $should: [{ added: { $lte: '2024-01-02T00:00:00Z' } }] } })).toEqual({ count: 1 });
    expect(await index.aggregate({ filter: { added: { $gte: '2024-02-02T00:00:00Z' } }, aggregations: { stock: { $sum: { field: 'stock' } } } })).toEqual({ stock: { value: 600 } });
    expect(await keys({ path: '/home' })).toEqual(['p:3']);
    expect(await keys({ 'maker.name': 'john' })).toEqual(['p:0', 'p:2']);
    expect(await keys({ summary: 'budget' })).toEqual(['p:1']);
  });

  it('boolean filters, and values that look like query syntax match literally', async () => {
    const index = redis.search.index({ name: 'products' });
    const keys = async (filter: Record<string, unknown>): Promise<string[]> =>
      (await index.query({ filter, select: {} })).map((r) => r.key).sort();
    expect(await keys({ $or: [{ price: { $lt: 20 } }, { name: 'pro' }] })).toEqual(['p:0', 'p:3']);
    expect(await keys({ $and: [{ name: 'laptop' }, { stock: { $gte: 100 } }] })).toEqual(['p:1']);
    expect(await keys({ $mustNot: { category: 'electronics' } })).toEqual(['p:3']);
    expect(await keys({ $must: { name: 'laptop' }, $mustNot: { name: 'pro' } })).toEqual(['p:1']);
    expect(await keys({ $should: [{ name: 'mouse' }, { name: 'case' }] })).toEqual(['p:2', 'p:3']);
    // $should beside $must only ranks: the mouse comes first, the other electronics still match.
    const ranked = await index.query({ filter: { $must: { category: 'electronics' }, $should: { name: 'mouse' } }, select: {} });
    expect(ranked.map((r) => r.key)[0]).toBe('p:2');
    expect(ranked).toHaveLength(3);
    expect(await keys({ name: 'laptop) | @price:[-inf +inf] (x' })).toEqual([]);
    expect(await keys({ sku: 'x} | @sku:{LP\\-1' })).toEqual([]);
    await expect(keys({ 'maker.name': '*' })).rejects.toThrow("ERR filter 'maker.name': the value has no searchable term");
  });

  it('documents, select, sort, paging, highlight and count', async () => {
    const index = redis.search.index({ name: 'products' });
    const [first] = await index.query({ filter: { sku: 'LB 2' } });
    expect(first).toEqual({ key: 'p:1', score: expect.any(Number), data: products[1] });

    const page = await index.query({ filter: { category: 'electronics' }, orderBy: { price: 'ASC' }, limit: 2, offset: 1, select: { name: true, 'maker.name': true } });
    expect(page.map((r) => r.data)).toEqual([
      { name: 'Laptop Basic', maker: { name: 'Jane Roe' } },
      { name: 'Laptop Pro', maker: { name: 'John Doe' } },
    ]);
    const desc = await index.query({ filter: {}, orderBy: { stock: 'DESC' }, select: {} });
    expect(desc.map((r) => r.key)).toEqual(['p:3', 'p:2', 'p:1', 'p:0']);
    expect(await index.query({ filter: {}, limit: 3, select: {} })).toHaveLength(3);

    const [lit] = await index.query({ filter: { name: 'pro' }, select: { name: true }, highlight: { fields: ['name'], preTag: '<b>', postTag: '</b>' } });
    expect(lit?.data).toEqual({ name: 'Laptop <b>Pro</b>' });

    // scoreFunc: ranked by the stock value (relevance replaced), then multiplied with relevance; paged; with content.
    const byStock = await index.query({ filter: {}, scoreFunc: { field: 'stock', scoreMode: 'replace' }, select: {} });
    expect(byStock.map((r) => [r.key, r.score])).toEqual([['p:3', 300], ['p:2', 200], ['p:1', 100], ['p:0', 50]]);
    const logged = await index.query({ filter: { category: 'electronics' }, scoreFunc: { field: 'stock', modifier: 'log1p', factor: 2 }, limit: 1, offset: 1 });
    expect(logged).toEqual([{ key: 'p:1', score: expect.any(Number), data: products[1] }]);
    const summed = await index.query({
      filter: {},
      scoreFunc: { fields: [{ field: 'stock' }, { field: 'price', missing: 0 }], combineMode: 'sum', scoreMode: 'replace' },
      select: { name: true },
      limit: 1,
    });
    expect(summed).toEqual([{ key: 'p:0', score: 50 + (products[0]?.price ?? 0), data: { name: 'Laptop Pro' } }]);
    await expect(index.query({ filter: {}, scoreFunc: 'nope' })).rejects.toThrow("unknown SCOREFUNC field 'nope'");

    expect(await index.count({ filter: { category: 'electronics' } })).toEqual({ count: 3 });
    expect(await index.count({ filter: { price: { $gt: 10_000 } } })).toEqual({ count: 0 });
  });

  it('aggregations: metrics, stats, percentiles, terms with sub-aggregations, range, histogram, facet', async () => {
    const index = redis.search.index({ name: 'products' });
    const result = await index.aggregate({
      filter: {},
      aggregations: {
        avg: { $avg: { field: 'stock' } },
        sum: { $sum: { field: 'stock' } },
        min: { $min: { field: 'price' } },
        max: { $max: { field: 'stock' } },
        count: { $count: { field: 'stock' } },
        skus: { $cardinality: { field: 'sku' } },
        stats: { $stats: { field: 'stock' } },
        median: { $percentiles: { field: 'stock', percents: [50] } },
        byCategory: { $terms: { field: 'category', size: 1 }, $aggs: { stock: { $sum: { field: 'stock' } } } },
        prices: { $range: { field: 'price', ranges: [{ to: 100 }, { from: 100 }] } },
        stockHistogram: { $histogram: { field: 'stock', interval: 100 } },
        tech: { $facet: { field: 'path', path: '/tech', depth: 2 } },
      },
    });
    expect(result).toEqual({
      avg: { value: 162.5 },
      sum: { value: 650 },
      min: { value: 19.99 },
      max: { value: 300 },
      count: { value: 4 },
      skus: { value: 3 },
      stats: { count: 4, min: 50, max: 300, sum: 650, avg: 162.5 },
      median: { values: { '50.0': 100 } },
      byCategory: { buckets: [{ key: 'electronics', docCount: 3, stock: { value: 350 } }], sumOtherDocCount: 1, docCountErrorUpperBound: 0 },
      prices: { buckets: [{ key: '*-100', docCount: 2, to: 100 }, { key: '100-*', docCount: 2, from: 100 }] },
      stockHistogram: { buckets: [0, 100, 200, 300].map((key) => ({ key, docCount: 1 })) },
      tech: {
        path: '/tech',
        sumOtherDocCount: 0,
        children: [
          { path: '/tech/computers', docCount: 2, sumOtherDocCount: 0, children: [{ path: '/tech/computers/laptops', docCount: 2, sumOtherDocCount: 0 }] },
          { path: '/tech/accessories', docCount: 1, sumOtherDocCount: 0, children: [] },
        ],
      },
    });
    // Bucket aggregations nested in buckets run once per bucket, with its condition added to the filter.
    const nested = await index.aggregate({
      filter: {},
      aggregations: {
        byCategory: {
          $terms: { field: 'category' },
          $aggs: {
            byActive: { $terms: { field: 'active' }, $aggs: { stock: { $sum: { field: 'stock' } }, cheap: { $range: { field: 'price', ranges: [{ to: 100 }] } } } },
            prices: { $range: { field: 'price', ranges: [{ to: 100 }, { from: 100 }] }, $aggs: { sku: { $terms: { field: 'sku', size: 1 } } } },
          },
        },
      },
    });
    const cheap = (docCount: number) => ({ buckets: [{ key: '*-100', docCount, to: 100 }] });
    const terms = (buckets: unknown[], sumOtherDocCount = 0) => ({ buckets, sumOtherDocCount, docCountErrorUpperBound: 0 });
    expect(nested).toEqual({
      byCategory: terms([
        {
          key: 'electronics',
          docCount: 3,
          byActive: terms([
            { key: 1, docCount: 2, stock: { value: 150 }, cheap: cheap(0) },
            { key: 0, docCount: 1, stock: { value: 200 }, cheap: cheap(1) },
          ]),
          prices: {
            buckets: [
              { key: '*-100', docCount: 1, to: 100, sku: terms([{ key: 'WM|3', docCount: 1 }]) },
              { key: '100-*', docCount: 2, from: 100, sku: terms([{ key: 'LB 2', docCount: 1 }], 1) },
            ],
          },
        },
        {
          key: 'accessories',
          docCount: 1,
          byActive: terms([{ key: 1, docCount: 1, stock: { value: 300 }, cheap: cheap(1) }]),
          prices: {
            buckets: [
              { key: '*-100', docCount: 1, to: 100, sku: terms([{ key: 'LP-1', docCount: 1 }]) },
              { key: '100-*', docCount: 0, from: 100, sku: terms([]) },
            ],
          },
        },
      ]),
    });
    const filtered = await index.aggregate({ filter: { category: 'electronics' }, aggregations: { s: { $extendedStats: { field: 'stock' } } } });
    expect(filtered['s']).toMatchObject({ count: 3, sum: 350, sumOfSquares: 52_500, variance: 3_888.88888889 });
    // Newer @upstash/redis (aggregate's `limit`) sends LIMIT n: the aggregations and the first n matches, as QUERY's hits.
    const aggregate = (...more: string[]) =>
      redis.exec<[unknown[], Array<[string, number, unknown]>]>(['SEARCH.AGGREGATE', 'products', JSON.stringify({ category: 'electronics' }), JSON.stringify({ n: { $count: { field: 'stock' } } }), ...more]);
    const [counted, firstHits] = await aggregate('LIMIT', '2');
    expect(counted).toEqual(['n', ['value', 3]]);
    expect(firstHits).toHaveLength(2);
    for (const [key, score, fields] of firstHits) {
      expect([key, typeof score, fields]).toEqual([expect.stringMatching(/^p:/), 'number', [['$', expect.objectContaining({ category: 'electronics' })]]]);
    }
    await expect(aggregate('OFFSET', '2')).rejects.toThrow("SEARCH.AGGREGATE: unknown option 'OFFSET'");
    await expect(aggregate('LIMIT', '-1')).rejects.toThrow('LIMIT');
  });

  it('a hash index; aliases; drop keeps the documents', async () => {
    await redis.hset('h:1', { name: 'Alice', score: 95, member: true });
    await redis.hset('h:2', { name: 'Bob', score: 87, member: false });
    const index = await redis.search.createIndex({ name: 'people', dataType: 'hash', prefix: ['h:'], schema: { name: 'TEXT', score: { type: 'U64', fast: true }, member: 'BOOL' } });
    await index.waitIndexing();
    const hits = await index.query({ filter: { score: { $gte: 80 } }, orderBy: { score: 'DESC' } });
    expect(hits.map((h) => [h.key, h.data])).toEqual([
      ['h:1', { name: 'Alice', score: 95, member: true }],
      ['h:2', { name: 'Bob', score: 87, member: false }],
    ]);
    expect(await redis.search.index({ name: 'people' }).count({ filter: { member: true } })).toEqual({ count: 1 });

    expect(await index.addAlias({ alias: 'folks' })).toBe(1);
    expect(await redis.search.index({ name: 'folks' }).count({ filter: { name: 'bob' } })).toEqual({ count: 1 });
    expect(await redis.search.alias.delete({ alias: 'folks' })).toBe(1);
    expect(await redis.search.alias.delete({ alias: 'folks' })).toBe(0);
    expect(await redis.search.alias.add({ indexName: 'people', alias: 'folks2' })).toBe(1);
    expect(await redis.search.alias.list()).toEqual({ folks2: 'people' });
    // ALIASADD of an existing alias moves it, as Upstash's "add or update", and answers 2.
    const others = await redis.search.createIndex({ name: 'others', dataType: 'hash', prefix: ['o:'], schema: { name: 'TEXT' } });
    expect(await redis.search.alias.add({ indexName: 'others', alias: 'folks2' })).toBe(2);
    expect(await redis.search.alias.add({ indexName: 'people', alias: 'folks3' })).toBe(1);
    expect(await redis.search.alias.list()).toEqual({ folks2: 'others', folks3: 'people' });
    const all = await redis.exec<string[][]>(['SEARCH.LISTINDEXES']);
    expect(all.map((entry) => entry[1])).toEqual(all.map((entry) => entry[1]).sort());
    expect(all).toContainEqual(['name', 'products', 'type', 'JSON']);
    expect(await redis.exec(['SEARCH.LISTINDEXES', 'MATCH', '*e*'])).toEqual([
      ['name', 'others', 'type', 'HASH'],
      ['name', 'people', 'type', 'HASH'],
    ]);
    expect(await redis.exec(['SEARCH.LISTINDEXES', 'MATCH', '*e*', 'OFFSET', '1'])).toEqual([['name', 'people', 'type', 'HASH']]);
    expect(await redis.exec(['SEARCH.LISTINDEXES', 'MATCH', 'p*', 'LIMIT', '1'])).toEqual([['name', 'people', 'type', 'HASH']]);
    await expect(redis.exec(['SEARCH.LISTINDEXES', 'LIMIT', 'x'])).rejects.toThrow('LIMIT must be a whole number');
    // The dictionary that records aliases is no key the tenant sees.
    expect(await redis.keys('restash*')).toEqual([]);
    expect(await others.drop()).toBe(1);
    expect(await redis.search.alias.list()).toEqual({ folks3: 'people' });

    // As Upstash, an alias of an index that does not exist yet is added (1): it points at the index once created.
    expect(await redis.search.alias.add({ indexName: 'later', alias: 'soon' })).toBe(1);
    expect(await redis.search.alias.list()).toEqual({ folks3: 'people', soon: 'later' });
    expect(await redis.search.index({ name: 'soon' }).query({ filter: {} })).toBeNull();
    await redis.hset('l:1', { name: 'Lee' });
    const later = await redis.search.createIndex({ name: 'later', dataType: 'hash', prefix: 'l:', schema: { name: 'TEXT' } });
    await later.waitIndexing();
    expect(await redis.search.index({ name: 'soon' }).count({ filter: { name: 'lee' } })).toEqual({ count: 1 });
    expect(await redis.search.alias.list()).toEqual({ folks3: 'people', soon: 'later' });
    expect(await redis.search.alias.add({ indexName: 'missing', alias: 'soon' })).toBe(2);
    expect(await redis.search.index({ name: 'soon' }).count({ filter: {} })).toEqual({ count: -1 });
    expect(await redis.search.alias.delete({ alias: 'soon' })).toBe(1);
    expect(await redis.search.alias.delete({ alias: 'soon' })).toBe(0);
    expect(await later.drop()).toBe(1);
    await redis.del('l:1');
    expect(await redis.search.alias.list()).toEqual({ folks3: 'people' });

    expect(await index.drop()).toBe(1);
    expect(await index.drop()).toBe(0);
    expect(await redis.hget('h:1', 'name')).toBe('Alice');
    // An index that does not exist: as Upstash, query nil, count -1, waitIndexing 0.
    expect(await index.query({ filter: {} })).toBeNull();
    expect(await index.count({ filter: {} })).toEqual({ count: -1 });
    expect(await index.waitIndexing()).toBe(0);
  });

  it('a string index (JSON values of string keys): kept in step with every kind of write, keys hidden, shadows gone with the index', async () => {
    const shadow = (key: string) => `__restash_string:${key}`;
    const doc = (name: string, views: number) => JSON.stringify({ title: `${name} post`, author: { name }, stats: { views } });
    // Written before the index: its initial scan finds them. A value that is no JSON object is not indexed.
    await redis.set('s:1', doc('John Doe', 1000));
    await redis.set('s:2', doc('Jane Smith', 500));
    await redis.set('s:plain', 'not json');
    await redis.set('elsewhere:1', doc('John Doe', 1));
    const schema = { title: 'TEXT', author: { name: 'TEXT' }, stats: { views: { type: 'U64', fast: true } } } as const;
    const index = await redis.search.createIndex({ name: 'posts', dataType: 'string', prefix: 's:', schema });
    expect(await index.waitIndexing()).toBe(1);
    expect(await index.describe()).toMatchObject({ name: 'posts', dataType: 'string', prefixes: ['s:'] });
    expect(await redis.exec(['SEARCH.LISTINDEXES', 'MATCH', 'posts'])).toEqual([['name', 'posts', 'type', 'STRING']]);
    const keys = async (filter: Record<string, unknown>): Promise<string[]> => (await index.query({ filter, select: {} })).map((r) => r.key).sort();
    expect(await keys({ 'author.name': { $eq: 'John' } })).toEqual(['s:1']);
    expect(await index.query({ filter: { 'stats.views': { $gte: 600 } } })).toEqual([
      { key: 's:1', score: expect.any(Number), data: { title: 'John Doe post', author: { name: 'John Doe' }, stats: { views: 1000 } } },
    ]);

    // Single commands, a pipeline, a transaction and a script, each seen by the next query.
    await redis.set('s:3', doc('John Roe', 2000));
    const pipeline = redis.pipeline();
    pipeline.set('s:4', doc('Ann Lee', 10));
    pipeline.set('s:2', doc('Jane Smith', 5000));
    await pipeline.exec();
    const tx = redis.multi();
    tx.set('s:5', doc('Bob Ray', 20));
    tx.del('s:4');
    await tx.exec();
    await redis.eval("return redis.call('SET', KEYS[1], ARGV[1])", ['s:6'], [doc('Eve Doe', 30)]);
    expect(await index.waitIndexing()).toBe(1);
    expect(await keys({})).toEqual(['s:1', 's:2', 's:3', 's:5', 's:6']);
    expect(await index.count({ filter: { 'stats.views': { $gte: 1000 } } })).toEqual({ count: 3 });
    expect(await keys({ 'author.name': { $eq: 'Doe' } })).toEqual(['s:1', 's:6']);
    const top = await index.query({ filter: {}, orderBy: { 'stats.views': 'DESC' }, limit: 2, select: { 'author.name': true } });
    expect(top.map((hit) => [hit.key, hit.data])).toEqual([
      ['s:2', { author: { name: 'Jane Smith' } }],
      ['s:3', { author: { name: 'John Roe' } }],
    ]);

    // Changes of value, type, name and expiry.
    await redis.set('s:1', 'no longer json');
    await redis.rename('s:3', 'elsewhere:3');
    await redis.del('s:6');
    await redis.hset('s:7', { title: 'a hash' });
    await redis.set('s:5', doc('Bob Ray', 20), { px: 300 });
    expect(await keys({})).toEqual(['s:2', 's:5']);
    expect(await redis.pttl(shadow('s:5'))).toBeGreaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, 400));
    // Expired with its key (reading it expires it now, whatever the server's expiry cycle did meanwhile).
    expect(await redis.exists(shadow('s:5'))).toBe(0);
    expect(await keys({})).toEqual(['s:2']);

    // The shadows are no keys the tenant sees.
    await redis.set('s:8', doc('Ann Lee', 1));
    expect(await redis.exists(shadow('s:8'))).toBe(1);
    expect((await redis.keys('*')).filter((k) => k.startsWith('__restash'))).toEqual([]);
    const [, scanned] = await redis.scan(0, { count: 1000 });
    expect(scanned.filter((k) => k.startsWith('__restash'))).toEqual([]);
    for (let i = 0; i < 20; i++) expect(await redis.randomkey()).not.toMatch(/^__restash/);

    // Dropping the index keeps the keys and removes their shadows.
    expect(await index.drop()).toBe(1);
    expect(await redis.get('s:8')).toEqual({ title: 'Ann Lee post', author: { name: 'Ann Lee' }, stats: { views: 1 } });
    expect(await redis.exists(shadow('s:8'), shadow('s:2'))).toBe(0);
    // Without an index, writes make no shadows.
    await redis.set('s:9', doc('Zed', 1));
    expect(await redis.exists(shadow('s:9'))).toBe(0);
    await redis.del('s:1', 's:2', 's:5', 's:7', 's:8', 's:9', 's:plain', 'elsewhere:1', 'elsewhere:3');
  });

  it('a string index answers queries as the official suite expects: order, operators, highlight of a noTokenize field', async () => {
    // As the suite: the index first, then the keys in order (equal scores come in the order the keys were written).
    const index = await redis.search.createIndex({
      name: 'string-products',
      dataType: 'string',
      prefix: 'sp:',
      schema: { name: 'TEXT', description: 'TEXT', category: { type: 'TEXT', noTokenize: true }, price: 'F64', stock: 'U64', active: 'BOOL' },
    });
    for (const [i, p] of products.entries()) await redis.set(`sp:${i}`, JSON.stringify(p));
    await index.waitIndexing();
    const names = async (options: Parameters<typeof index.query>[0]) => ((await index.query(options)) ?? []).map((hit) => (hit.data as { name: string }).name);
    expect(await names({ filter: { name: { $eq: 'Laptop' } } })).toEqual(['Laptop Pro', 'Laptop Basic']);
    expect(await names({ filter: { name: { $fuzzy: { value: 'Laptopp', distance: 2 } } } })).toEqual(['Laptop Pro', 'Laptop Basic']);
    expect(await names({ filter: { description: { $phrase: { value: 'wireless mouse', prefix: true } } } })).toEqual(['Wireless Mouse']);
    expect(await names({ filter: { price: { $gt: 500 } } })).toEqual(['Laptop Pro', 'Laptop Basic']);
    expect(await names({ filter: { category: { $eq: 'electronics' } }, orderBy: { price: 'ASC' }, limit: 2 })).toEqual(['Wireless Mouse', 'Laptop Basic']);
    const highlighted = await index.query({ filter: { category: { $eq: 'electronics' } }, select: { category: true }, highlight: { fields: ['category'] } });
    expect(highlighted?.map((hit) => hit.data)).toEqual([{ category: '<em>electronics</em>' }, { category: '<em>electronics</em>' }, { category: '<em>electronics</em>' }]);
    expect(await index.drop()).toBe(1);
    await redis.del(...products.map((_, i) => `sp:${i}`));
  });

  it('a stream index: entries by ID, kept in step with XADD, XDEL, XTRIM, pipelines, transactions, DEL, RENAME and expiry; SKIPINITIALSCAN; shadows hidden, gone with the index', async () => {
    const streamSchema = { message: 'TEXT', severity: { type: 'U64', fast: true }, service: 'KEYWORD' } as const;
    const index = await redis.search.createIndex({ name: 'events', schema: streamSchema, dataType: 'stream', stream: 'ev' });
    await redis.xadd('ev', '1-0', { message: 'Payment authorization failed', severity: 4, service: 'checkout' });
    await redis.xadd('ev', '2-0', { message: 'Order completed', severity: 1, service: 'checkout' });
    // A stream whose key starts as ev's shadows' names do stays out of ev's index.
    await redis.xadd('ev:1', '1-0', { message: 'other stream', severity: 9, service: 'checkout' });
    expect(await index.waitIndexing()).toBe(1);
    expect(await index.query({ filter: { message: 'authorization', severity: { $gte: 3 } } })).toEqual([
      expect.objectContaining({ key: '1-0', data: { message: 'Payment authorization failed', severity: 4, service: 'checkout' } }),
    ]);
    const selected = await index.query({ filter: { service: 'checkout' }, orderBy: { severity: 'ASC' }, select: { message: true } });
    expect(selected.map((r) => [r.key, r.data])).toEqual([
      ['2-0', { message: 'Order completed' }],
      ['1-0', { message: 'Payment authorization failed' }],
    ]);
    expect(await index.count({ filter: { service: 'checkout' } })).toEqual({ count: 2 });
    expect(await index.describe()).toEqual({
      name: 'events',
      dataType: 'stream',
      prefixes: ['ev'],
      schema: { message: { type: 'TEXT' }, severity: { type: 'U64', fast: true }, service: { type: 'KEYWORD' } },
    });
    expect((await redis.keys('*')).filter((k) => k.includes('restash'))).toEqual([]);
    const ids = async () => (await index.query({ filter: {}, orderBy: { severity: 'ASC' } })).map((r) => r.key);

    await redis.xdel('ev', '1-0');
    const pipeline = redis.pipeline();
    pipeline.xadd('ev', '3-0', { message: 'retry', severity: 2, service: 'api' });
    pipeline.xadd('ev', '4-0', { message: 'timeout', severity: 3, service: 'api' });
    pipeline.xadd('ev', '4-1', { message: 'gone', severity: 4, service: 'api' });
    await pipeline.exec();
    expect(await ids()).toEqual(['2-0', '3-0', '4-0', '4-1']);
    await redis.xdel('ev', ['3', '4-1']); // an entry inside the stream; an ID without its sequence number is <ms>-0
    expect(await ids()).toEqual(['2-0', '4-0']);
    const tx = redis.multi();
    tx.xtrim('ev', { strategy: 'MAXLEN', threshold: 1, exactness: '=' });
    tx.xadd('ev', '5-0', { message: 'later', severity: 5, service: 'api' });
    await tx.exec();
    expect(await ids()).toEqual(['4-0', '5-0']);
    await redis.expire('ev', 600);
    expect(await redis.exec(['PTTL', '__restash_stream:2:ev:4-0'])).toBeGreaterThan(500_000);
    await redis.persist('ev');
    expect(await redis.exec(['PTTL', '__restash_stream:2:ev:4-0'])).toBe(-1);
    await redis.rename('ev', 'ev-moved');
    expect(await ids()).toEqual([]);
    await redis.rename('ev-moved', 'ev');
    expect(await ids()).toEqual(['4-0', '5-0']);
    await redis.del('ev');
    expect(await ids()).toEqual([]);
    await redis.xadd('ev', '1-0', { message: 'again', severity: 1, service: 'api' });
    expect(await ids()).toEqual(['1-0']);

    // SKIPINITIALSCAN: entries that exist when the index is made are not indexed.
    await redis.xadd('old', '1-0', { message: 'old', severity: 1, service: 'a' });
    const later = await redis.search.createIndex({ name: 'later', schema: streamSchema, dataType: 'stream', stream: 'old', skipInitialScan: true });
    await redis.xadd('old', '2-0', { message: 'new', severity: 1, service: 'a' });
    await later.waitIndexing();
    expect((await later.query({ filter: { service: 'a' } })).map((r) => r.key)).toEqual(['2-0']);
    expect(await redis.exec(['SEARCH.LISTINDEXES', 'MATCH', 'later'])).toEqual([['name', 'later', 'type', 'STREAM']]);

    expect(await index.drop()).toBe(1);
    expect(await later.drop()).toBe(1);
    expect(await redis.exec(['EXISTS', '__restash_stream:2:ev', '__restash_stream:2:ev!', '__restash_stream:2:ev:1-0', '__restash_stream:3:old:2-0'])).toBe(0);
    expect(await redis.xlen('ev')).toBe(1);
    await redis.del('ev', 'ev:1', 'old');
  });

  it('bad input: 400 with a clear text, nothing created', async () => {
    const index = redis.search.index({ name: 'products' });
    await expect(index.query({ filter: { nope: 1 } })).rejects.toThrow("ERR filter: unknown field 'nope'");
    await expect(index.query({ filter: { price: { $near: 1 } } })).rejects.toThrow("ERR filter 'price': unknown operator '$near' for a F64 field");
    await expect(index.query({ filter: { price: { $gt: 'x' } } })).rejects.toThrow("ERR filter 'price': expected a number");
    await expect(index.query({ filter: { sku: { $gt: 'A' } } })).rejects.toThrow('$gt is not supported on KEYWORD fields on this server');
    await expect(index.query({ filter: { $or: [{ added: { $gte: 'soon' } }] } })).rejects.toThrow("ERR filter 'added': expected a date");
    await expect(index.query({ filter: { added: { $gte: 'soon' } } })).rejects.toThrow("ERR filter 'added': expected a date");
    await expect(index.query({ filter: { name: { $regex: '[a-z]+' } } })).rejects.toThrow("$regex '[a-z]+' is not supported on this server");
    await expect(index.query({ filter: {}, scoreFunc: { field: 'stock', factor: Number.NaN } })).rejects.toThrow('SCOREFUNC FACTOR must be a number');
    await expect(index.aggregate({ filter: {}, aggregations: { x: { $median: { field: 'stock' } } } })).rejects.toThrow("ERR aggregation 'x': unknown aggregation '$median'");
    await expect(redis.exec(['SEARCH.CREATE', 'streams', 'ON', 'STREAM', 'PREFIX', '1', 'x:', 'SCHEMA', 'a', 'TEXT'])).rejects.toThrow(
      "ERR SEARCH.CREATE: expected SCHEMA, got '1'",
    );
    // The SDK drops a field of an unknown type from the schema; the server refuses an empty schema.
    await expect(redis.search.createIndex({ name: 'bad', dataType: 'hash', prefix: 'b:', schema: { name: 'VECTOR' as 'TEXT' } })).rejects.toThrow(
      'ERR SEARCH.CREATE: the schema needs at least one field',
    );
    expect(await redis.search.index({ name: 'bad' }).describe()).toBeNull();
  });
});
