import type { Reply } from '@restash/kv/util-command';
import { escapeField, escapeTag } from './filter';
import { bad, list, num, pairs, text } from './reply';
import { fieldKind, type IndexSchema, type SearchField } from './schema';

type Spec = Record<string, unknown>;

const METRICS = ['$avg', '$sum', '$min', '$max', '$count', '$cardinality', '$stats', '$extendedStats', '$percentiles'];
const BUCKETS = ['$terms', '$range', '$histogram', '$facet'];
const DEFAULT_PERCENTS = [1, 5, 25, 50, 75, 95, 99];

/** The pieces of one FT.AGGREGATE pipeline that several aggregations share: loaded fields and APPLY steps. */
class Pipeline {
  private readonly loads = new Map<string, string>();
  private readonly applies: string[] = [];
  private counter = 0;

  constructor(private readonly schema: IndexSchema) {}

  /** The property a field is loaded as (`@__fN`), so expressions never see a dotted or escaped attribute name. */
  field(path: unknown, where: string, numeric: boolean): string {
    if (typeof path !== 'string') throw bad(`${where}: field must be a string`);
    const field: SearchField | undefined = this.schema.fields.find((f) => f.path === path);
    if (!field) throw bad(`${where}: unknown field '${path}'`);
    if (numeric && fieldKind(field) !== 'numeric') throw bad(`${where}: '${path}' is not a numeric field`);
    let alias = this.loads.get(path);
    if (!alias) {
      alias = `__f${this.loads.size}`;
      this.loads.set(path, alias);
    }
    return alias;
  }

  /** A new property computed by `expression` (APPLY … AS name). */
  apply(expression: string): string {
    const name = `__a${this.counter++}`;
    this.applies.push('APPLY', expression, 'AS', name);
    return name;
  }

  /** A fresh reducer output name. */
  name(): string {
    return `__r${this.counter++}`;
  }

  /**
   * `FT.AGGREGATE index query LOAD … [FILTER exists(@required)] APPLY …` (the caller appends GROUPBY): an APPLY
   * on a document without the property fails the whole command, so a bucket field is filtered first.
   */
  head(index: string, query: string, required?: string): string[] {
    const load: string[] = [];
    for (const [path, alias] of this.loads) load.push(`@${escapeField(path)}`, 'AS', alias);
    return [
      'FT.AGGREGATE', index, query, ...(load.length > 0 ? ['LOAD', String(load.length), ...load] : []),
      ...(required ? ['FILTER', `exists(@${required})`] : []), ...this.applies,
    ];
  }

  /** Whether a field is numeric in the schema (bucket keys as numbers). */
  isNumeric(path: string): boolean {
    const field = this.schema.fields.find((f) => f.path === path);
    return field !== undefined && fieldKind(field) === 'numeric';
  }
}

/** 12 significant digits: the sums of squares rebuilt from STDDEV carry rounding noise in the last digits. */
function round<T extends number | null>(value: T): T {
  return (value === null ? null : Number(value.toPrecision(12))) as T;
}

/** A metric aggregation: its reducers, and how one result row becomes the SDK's value array. */
interface Metric {
  reducers: string[];
  format(row: Map<string, Reply>): Reply;
}

function operator(spec: unknown, where: string, allowed: string[]): [string, Spec] {
  if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) throw bad(`${where}: must be an object`);
  const ops = Object.keys(spec).filter((k) => k !== '$aggs');
  const op = ops[0];
  if (ops.length !== 1 || op === undefined) throw bad(`${where}: needs exactly one aggregation operator`);
  if (!allowed.includes(op)) {
    throw bad(
      [...METRICS, ...BUCKETS].includes(op)
        ? `${where}: ${op} cannot be nested in a bucket aggregation on this server`
        : `${where}: unknown aggregation '${op}'`,
    );
  }
  const body = (spec as Spec)[op];
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw bad(`${where}: ${op} takes an object`);
  return [op, body as Spec];
}

function optionalNumber(value: unknown, where: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw bad(`${where} must be a number`);
  return value;
}

/**
 * A metric over a field. Reducers skip documents without the field; APPLY expressions would fail on them, so
 * the only expression is `exists(@f)` (the per-document count), and `missing` is folded in afterwards from the
 * number of documents without the field. Variance comes from RediSearch's STDDEV (sample) reducer.
 */
function metric(p: Pipeline, op: string, body: Spec, where: string): Metric {
  const numeric = op !== '$count' && op !== '$cardinality';
  const value = `@${p.field(body['field'], where, numeric)}`;
  const missing = optionalNumber(body['missing'], `${where}: missing`);
  if (missing !== undefined && op === '$percentiles') throw bad(`${where}: missing is not supported for $percentiles on this server`);
  const has = `@${p.apply(`exists(${value})`)}`;
  const reducers: string[] = [];
  const reducer = (fn: string, ...args: string[]): string => {
    const name = p.name();
    reducers.push('REDUCE', fn, String(args.length), ...args, 'AS', name);
    return name;
  };
  const total = reducer('COUNT');
  const present = reducer('SUM', has);
  const sum = reducer('SUM', value);
  const min = reducer('MIN', value);
  const max = reducer('MAX', value);
  const stddev = op === '$extendedStats' ? reducer('STDDEV', value) : '';
  const distinct = op === '$cardinality' ? reducer('COUNT_DISTINCT', value) : '';
  const percents = op === '$percentiles' ? body['percents'] ?? DEFAULT_PERCENTS : [];
  if (!Array.isArray(percents) || (op === '$percentiles' && percents.length === 0) || percents.some((x) => typeof x !== 'number' || x < 0 || x > 100)) {
    throw bad(`${where}: percents must be numbers from 0 to 100`);
  }
  const quantiles = (percents as number[]).map((pc) => reducer('QUANTILE', value, String(pc / 100)));
  const sigma = optionalNumber(body['sigma'], `${where}: sigma`) ?? 2;
  const keyed = body['keyed'] !== false;
  return {
    reducers,
    format: (row) => {
      const get = (name: string): number => num(row.get(name));
      const all = get(total) || 0;
      const counted = get(present) || 0;
      const filled = missing === undefined ? 0 : all - counted;
      const count = counted + filled;
      const empty = count === 0;
      const total_ = (counted === 0 ? 0 : get(sum)) + filled * (missing ?? 0);
      const lowest = counted === 0 ? missing : filled > 0 ? Math.min(get(min), missing as number) : get(min);
      const highest = counted === 0 ? missing : filled > 0 ? Math.max(get(max), missing as number) : get(max);
      const avg = empty ? null : total_ / count;
      switch (op) {
        case '$count': return ['value', counted];
        case '$cardinality': return ['value', get(distinct) || 0];
        case '$sum': return ['value', total_];
        case '$avg': return ['value', avg];
        case '$min': return ['value', empty ? null : (lowest ?? null)];
        case '$max': return ['value', empty ? null : (highest ?? null)];
        case '$percentiles': {
          const values = (percents as number[]).map((pc, k): [number, number | null] => [pc, empty ? null : get(quantiles[k] ?? '')]);
          if (keyed) return ['values', values.flatMap(([pc, v]): Reply[] => [Number.isInteger(pc) ? pc.toFixed(1) : String(pc), v])];
          return ['values', values.map(([pc, v]): Reply => ['key', pc, 'value', v])];
        }
      }
      const out: Reply[] = ['count', count, 'min', empty ? null : (lowest ?? null), 'max', empty ? null : (highest ?? null), 'sum', total_, 'avg', avg];
      if (op === '$stats') return out;
      // Sum of squares of the present values from the sample deviation, then the filled-in `missing` values.
      const sd = counted > 1 ? get(stddev) : 0;
      const presentSum = counted === 0 ? 0 : get(sum);
      const squares = (counted > 1 ? sd * sd * (counted - 1) : 0) + (counted === 0 ? 0 : (presentSum * presentSum) / counted) + filled * (missing ?? 0) ** 2;
      const population = empty || avg === null ? null : Math.max(squares / count - avg * avg, 0);
      const sampling = population === null || count < 2 ? null : (population * count) / (count - 1);
      const sdPopulation = population === null ? null : Math.sqrt(population);
      const sdSampling = sampling === null ? null : Math.sqrt(sampling);
      const bound = (d: number | null, sign: number): number | null => (avg === null || d === null ? null : round(avg + sign * sigma * d));
      out.push(
        'sumOfSquares', round(squares), 'variance', round(population), 'variancePopulation', round(population),
        'varianceSampling', round(sampling), 'stdDeviation', round(sdPopulation), 'stdDeviationPopulation', round(sdPopulation),
        'stdDeviationSampling', round(sdSampling),
        'stdDeviationBounds', [
          'upper', bound(sdPopulation, 1), 'lower', bound(sdPopulation, -1), 'upperSampling', bound(sdSampling, 1),
          'lowerSampling', bound(sdSampling, -1), 'upperPopulation', bound(sdPopulation, 1), 'lowerPopulation', bound(sdPopulation, -1),
        ],
      );
      return out;
    },
  };
}

/** One step of SEARCH.AGGREGATE: the FT.AGGREGATE commands to run and how their replies become the SDK's value. */
export interface AggregationPlan {
  name: string;
  commands: string[][];
  /** The SDK's value; a bucket aggregation's is `['buckets', [bucket, …], …]`, each bucket `[key, value, …]`. */
  format(replies: Reply[]): Reply;
  /**
   * Bucket aggregations nested in each bucket (`$aggs` of `$terms`, `$range`, `$histogram`): they run once per bucket
   * over the query with the bucket's condition added ({@link runAggregations}); `conditions` lists those, in the
   * order of format's buckets.
   */
  nested?: { aggregations: Array<[string, unknown]>; conditions(replies: Reply[]): string[] };
}

function rows(reply: Reply): Map<string, Reply>[] {
  return list(reply).slice(1).map((row) => pairs(row));
}

/** The `$aggs` of a bucket aggregation: metrics (reducers of its own pipeline) and bucket aggregations (nested). */
function subAggregations(p: Pipeline, spec: Spec, where: string, buckets: string[]): { metrics: [string, Metric][]; nested: Array<[string, unknown]> } {
  const aggs = spec['$aggs'];
  const out: { metrics: [string, Metric][]; nested: Array<[string, unknown]> } = { metrics: [], nested: [] };
  if (aggs === undefined) return out;
  if (typeof aggs !== 'object' || aggs === null || Array.isArray(aggs)) throw bad(`${where}: $aggs must be an object`);
  for (const [name, sub] of Object.entries(aggs as Spec)) {
    const [op, body] = operator(sub, `${where}.${name}`, [...METRICS, ...buckets]);
    if (METRICS.includes(op)) out.metrics.push([name, metric(p, op, body, `${where}.${name}`)]);
    else out.nested.push([name, sub]);
  }
  return out;
}

/** A number as a RediSearch numeric bound. */
function bound(value: number | undefined, infinity: '-inf' | '+inf', exclusive: boolean): string {
  return value === undefined ? infinity : `${exclusive ? '(' : ''}${value}`;
}

function nonNegativeInteger(value: unknown, fallback: number, where: string): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) throw bad(`${where} must be a non-negative integer`);
  return value;
}

/** The most FT.AGGREGATE commands one SEARCH.AGGREGATE may run (a nested bucket aggregation runs once per bucket). */
export const MAX_AGGREGATE_COMMANDS = 1000;

/**
 * Runs the named aggregations of one SEARCH.AGGREGATE over `query` and answers `[name, value, …]`: each as
 * {@link planAggregation} plans it and, in each of its buckets, the bucket aggregations nested in it, over the query
 * with the bucket's condition added, to any depth (Upstash's nested `$aggs`). Every aggregation, nested ones
 * included, is checked before anything runs.
 * @throws KvError 400 as planAggregation, or when more than MAX_AGGREGATE_COMMANDS commands would run; errors of `run`
 */
export async function runAggregations(run: (args: string[]) => Promise<Reply>, index: string, query: string, aggregations: Record<string, unknown>, schema: IndexSchema): Promise<Reply[]> {
  const check = (name: string, spec: unknown): void => {
    for (const [n, s] of planAggregation(index, query, name, spec, schema).nested?.aggregations ?? []) check(n, s);
  };
  for (const [name, spec] of Object.entries(aggregations)) check(name, spec);
  let left = MAX_AGGREGATE_COMMANDS;
  const one = async (where: string, name: string, spec: unknown): Promise<Reply> => {
    const plan = planAggregation(index, where, name, spec, schema);
    left -= plan.commands.length;
    if (left < 0) throw bad(`aggregation '${name}': needs more than ${MAX_AGGREGATE_COMMANDS} queries on this server (a nested bucket aggregation runs once per bucket)`);
    const replies: Reply[] = [];
    for (const command of plan.commands) replies.push(await run(command));
    const value = plan.format(replies);
    if (!plan.nested || plan.nested.aggregations.length === 0) return value;
    const conditions = plan.nested.conditions(replies);
    const buckets = list(list(value)[1]);
    for (let i = 0; i < buckets.length; i++) {
      const inner = where === '*' ? (conditions[i] as string) : `(${where}) ${conditions[i]}`;
      for (const [n, s] of plan.nested.aggregations) list(buckets[i]).push(n, await one(inner, n, s));
    }
    return value;
  };
  const out: Reply[] = [];
  for (const [name, spec] of Object.entries(aggregations)) out.push(name, await one(query, name, spec));
  return out;
}

/**
 * Plans one named aggregation of SEARCH.AGGREGATE over `query` (the filter already translated): metrics
 * (`$avg $sum $min $max $count $cardinality $stats $extendedStats $percentiles`) as one FT.AGGREGATE GROUPBY 0;
 * `$terms`, `$histogram` and `$facet` as one GROUPBY on the field; `$range` as one FT.AGGREGATE per range.
 * Bucket aggregations (but `$facet`) may nest metric `$aggs`, computed with the buckets, and bucket `$aggs`, which
 * {@link runAggregations} runs per bucket (AggregationPlan.nested). Replies take the shapes `@upstash/redis` parses
 * (`["value", n]`, `["count", …]`, `["buckets", […], "sumOtherDocCount", n, …]`, `["path", p, …, "children", […]]`).
 * @throws KvError 400 for an unknown aggregation, a bad option, an unknown field, or `$aggs` of a metric or `$facet`
 */
export function planAggregation(index: string, query: string, name: string, spec: unknown, schema: IndexSchema): AggregationPlan {
  const where = `aggregation '${name}'`;
  const p = new Pipeline(schema);
  const [op, body] = operator(spec, where, [...METRICS, ...BUCKETS]);
  if (METRICS.includes(op)) {
    if ((spec as Spec)['$aggs'] !== undefined) throw bad(`${where}: a metric aggregation takes no $aggs`);
    const m = metric(p, op, body, where);
    return {
      name,
      commands: [[...p.head(index, query), 'GROUPBY', '0', ...m.reducers]],
      format: ([reply]) => m.format(rows(reply as Reply)[0] ?? new Map()),
    };
  }
  const { metrics: subs, nested } = subAggregations(p, spec as Spec, where, op === '$facet' ? [] : ['$terms', '$range', '$histogram']);
  const attribute = `@${escapeField(String(body['field']))}:`;
  const reducers = subs.flatMap(([, m]) => m.reducers);
  const bucket = (row: Map<string, Reply>, head: Reply[]): Reply => [...head, ...subs.flatMap(([n, m]): Reply[] => [n, m.format(row)])];
  const count = p.name();
  const countReducer = ['REDUCE', 'COUNT', '0', 'AS', count];
  if (op === '$range') {
    const field = p.field(body['field'], where, true);
    const ranges = body['ranges'];
    if (!Array.isArray(ranges) || ranges.length === 0) throw bad(`${where}: ranges must be a non-empty array`);
    const bounds = ranges.map((r: unknown, k): [number | undefined, number | undefined] => {
      if (typeof r !== 'object' || r === null) throw bad(`${where}: ranges[${k}] must be an object`);
      return [optionalNumber((r as Spec)['from'], `${where}: from`), optionalNumber((r as Spec)['to'], `${where}: to`)];
    });
    const commands = bounds.map(([from, to]) => {
      const test = [from === undefined ? '' : `@${field} >= ${from}`, to === undefined ? '' : `@${field} < ${to}`].filter((t) => t !== '');
      const inRange = test.length === 0 ? [] : ['FILTER', test.map((t) => `(${t})`).join(' && ')];
      return [...p.head(index, query, field), ...inRange, 'GROUPBY', '0', ...countReducer, ...reducers];
    });
    return {
      name,
      commands,
      nested: { aggregations: nested, conditions: () => bounds.map(([from, to]) => `${attribute}[${bound(from, '-inf', false)} ${bound(to, '+inf', true)}]`) },
      format: (replies) => [
        'buckets',
        bounds.map(([from, to], k): Reply => {
          const row = rows(replies[k] as Reply)[0] ?? new Map<string, Reply>();
          const head: Reply[] = ['key', `${from ?? '*'}-${to ?? '*'}`, 'docCount', num(row.get(count)) || 0];
          if (from !== undefined) head.push('from', from);
          if (to !== undefined) head.push('to', to);
          return bucket(row, head);
        }),
      ],
    };
  }
  if (op === '$histogram') {
    const field = p.field(body['field'], where, true);
    const interval = optionalNumber(body['interval'], `${where}: interval`);
    if (interval === undefined || interval <= 0) throw bad(`${where}: interval must be a positive number`);
    const key = p.apply(`floor(@${field} / ${interval}) * ${interval}`);
    // The buckets with documents, and the empty ones between them, in key order.
    const buckets = (reply: Reply): Array<[number, Map<string, Reply> | undefined]> => {
      const found = rows(reply)
        .map((row): [number, Map<string, Reply>] => [num(row.get(key)), row])
        .filter(([k]) => Number.isFinite(k))
        .sort((a, b) => a[0] - b[0]);
      const out: Array<[number, Map<string, Reply> | undefined]> = [];
      for (let k = 0; k < found.length; k++) {
        const [at, row] = found[k] as [number, Map<string, Reply>];
        out.push([at, row]);
        const nextKey = found[k + 1]?.[0];
        for (let gap = at + interval; nextKey !== undefined && gap < nextKey - interval / 2; gap += interval) out.push([gap, undefined]);
      }
      return out;
    };
    return {
      name,
      commands: [[...p.head(index, query, field), 'GROUPBY', '1', `@${key}`, ...countReducer, ...reducers]],
      nested: { aggregations: nested, conditions: ([reply]) => buckets(reply as Reply).map(([at]) => `${attribute}[${at} (${at + interval}]`) },
      format: ([reply]) => [
        'buckets',
        buckets(reply as Reply).map(([at, row]) => (row ? bucket(row, ['key', at, 'docCount', num(row.get(count))]) : ['key', at, 'docCount', 0])),
      ],
    };
  }
  const path = body['field'];
  const field = p.field(path, where, false);
  const grouped = [...p.head(index, query, field), 'GROUPBY', '1', `@${field}`, ...countReducer, ...reducers];
  if (op === '$terms') {
    const size = nonNegativeInteger(body['size'], 10, `${where}: size`);
    const numeric = p.isNumeric(path as string);
    const found = schema.fields.find((f) => f.path === path) as SearchField;
    const kind = fieldKind(found);
    // FT.AGGREGATE loads a JSON boolean as 1 or 0; the TAG holds true or false.
    const boolean = found.type === 'BOOL';
    if (nested.length > 0 && kind === 'text') throw bad(`${where}: bucket $aggs of $terms need a field matched whole (KEYWORD, FACET, BOOL, a number, or noTokenize TEXT)`);
    const all = (reply: Reply): Array<[string, number, Map<string, Reply>]> =>
      rows(reply)
        .map((row): [string, number, Map<string, Reply>] => [text(row.get(field)), num(row.get(count)), row])
        .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    return {
      name,
      commands: [grouped],
      nested: {
        aggregations: nested,
        conditions: ([reply]) =>
          all(reply as Reply)
            .slice(0, size)
            .map(([k]) => (numeric ? `${attribute}[${k} ${k}]` : `${attribute}{${escapeTag(boolean ? (k === '1' || k === 'true' ? 'true' : 'false') : k)}}`)),
      },
      format: ([reply]) => {
        const sorted = all(reply as Reply);
        const other = sorted.slice(size).reduce((sum, [, c]) => sum + c, 0);
        return [
          'buckets',
          sorted.slice(0, size).map(([k, c, row]) => bucket(row, ['key', numeric ? num(k) : k, 'docCount', c])),
          'sumOtherDocCount', other, 'docCountErrorUpperBound', 0,
        ];
      },
    };
  }
  // $facet: the values are paths (`/a/b`); children of `path` up to `depth` levels, counted from the groups.
  if (subs.length > 0) throw bad(`${where}: $facet takes no $aggs on this server`);
  const root = typeof body['path'] === 'string' ? (body['path'] as string) : '/';
  const depth = nonNegativeInteger(body['depth'], 1, `${where}: depth`);
  const size = nonNegativeInteger(body['size'], 10, `${where}: size`);
  const minDocCount = nonNegativeInteger(body['minDocCount'], 1, `${where}: minDocCount`);
  const order = (body['order'] as Spec | undefined)?.['count'] === 'asc' ? 1 : -1;
  return {
    name,
    commands: [grouped],
    format: ([reply]) => {
      const counts = rows(reply as Reply).map((row): [string, number] => [text(row.get(field)), num(row.get(count))]);
      return ['path', root, ...facetLevel(counts, root, depth, size, minDocCount, order)];
    },
  };
}

function facetLevel(counts: [string, number][], path: string, depth: number, size: number, minDocCount: number, order: number): Reply[] {
  const base = path.endsWith('/') ? path : `${path}/`;
  const children = new Map<string, number>();
  for (const [value, c] of counts) {
    if (!value.startsWith(base)) continue;
    const segment = value.slice(base.length).split('/')[0];
    if (!segment) continue;
    const child = base + segment;
    children.set(child, (children.get(child) ?? 0) + c);
  }
  const sorted = [...children].filter(([, c]) => c >= minDocCount).sort((a, b) => order * (a[1] - b[1]) || (a[0] < b[0] ? -1 : 1));
  const shown = sorted.slice(0, size);
  const other = sorted.slice(size).reduce((sum, [, c]) => sum + c, 0);
  return [
    'sumOtherDocCount', other,
    'children', shown.map(([child, c]): Reply => {
      const item: Reply[] = ['path', child, 'docCount', c];
      if (depth > 1) item.push(...facetLevel(counts, child, depth - 1, size, minDocCount, order));
      else item.push('sumOtherDocCount', 0);
      return item;
    }),
  ];
}
