// values.yaml, values.schema.json, _validate.tpl, helm lint and the README's values table.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { APPS, CHART_DIR, helm, renderError } from './helm';
import { README_BEGIN, README_END, documentedValues, valuesTable } from './values-doc';

const valuesText = readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8');
const values = parse(valuesText) as Record<string, unknown>;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const schema = JSON.parse(readFileSync(join(CHART_DIR, 'values.schema.json'), 'utf8')) as any;

/** Every leaf path of a values tree (maps and lists are leaves when empty). */
function leaves(node: unknown, prefix = ''): string[] {
  if (node === null || typeof node !== 'object' || Array.isArray(node) || Object.keys(node).length === 0) return [prefix];
  return Object.entries(node).flatMap(([key, value]) => leaves(value, prefix ? `${prefix}.${key}` : key));
}

describe('values.yaml', () => {
  const documented = documentedValues(valuesText).map((v) => v.path);

  it('documents every value with an @param line (a value or one of its parents)', () => {
    const undocumented = leaves(values).filter((path) => !documented.some((d) => path === d || path.startsWith(`${d}.`)));
    expect(undocumented).toEqual([]);
  });

  it('documents only values that exist', () => {
    const has = (path: string) => path.split('.').reduce<unknown>((node, key) => (node && typeof node === 'object' && key in node ? (node as Record<string, unknown>)[key] : undefined), values) !== undefined;
    expect(documented.filter((path) => !has(path))).toEqual([]);
  });

  it('is described by values.schema.json, path by path', () => {
    const inSchema = (path: string) =>
      path.split('.').reduce<unknown>((node, key) => {
        const n = node as { properties?: Record<string, unknown>; additionalProperties?: unknown } | undefined;
        return n?.properties?.[key] ?? (typeof n?.additionalProperties === 'object' ? n.additionalProperties : undefined);
      }, schema) !== undefined;
    expect(documented.filter((path) => !inSchema(path))).toEqual([]);
  });

  it.each(APPS)("lists the same config variables of $component in values and schema", ({ key }) => {
    expect(Object.keys(schema.properties[key].properties.config.properties).sort()).toEqual(Object.keys((values[key] as { config: object }).config).sort());
  });

  it("is the README's values table", () => {
    const readme = readFileSync(join(CHART_DIR, 'README.md'), 'utf8');
    const table = readme.slice(readme.indexOf(README_BEGIN) + README_BEGIN.length, readme.indexOf(README_END)).trim();
    expect(table).toBe(valuesTable(valuesText).trim());
  });
});

describe('values.schema.json rejects bad values with a message naming the value', () => {
  it.each([
    ['a string replica count', { 'kvGateway.replicaCount': 'two' }, "at '/kvGateway/replicaCount': got string, want integer"],
    ['an unknown pull policy', { 'operator.image.pullPolicy': 'Sometimes' }, "at '/operator/image/pullPolicy': value must be one of"],
    ['a memory that is not a quantity', { 'queueWorker.resources.limits.memory': 'lots' }, "at '/queueWorker/resources/limits/memory': 'lots' does not match pattern"],
    ['an http control Redis URL', { 'controlRedis.url': 'http://redis:6379' }, "at '/controlRedis/url': 'http://redis:6379' does not match pattern '^$|^rediss?("],
    ['a Qdrant URL without a scheme', { 'qdrant.url': 'qdrant:6333' }, "at '/qdrant/url': 'qdrant:6333' does not match pattern"],
    ['a broker without a port', { 'kafka.brokers[0]': 'kafka' }, "at '/kafka/brokers/0': 'kafka' does not match pattern"],
    ['an unknown app setting', { 'kvGateway.config.POOL': 3 }, "at '/kvGateway/config': additional properties 'POOL' not allowed"],
    ['an unknown log level', { 'streamGateway.config.LOG_LEVEL': 'trace' }, "at '/streamGateway/config/LOG_LEVEL': value must be one of"],
    ['a misspelt top-level key', { 'controlRedisUrl': 'redis://x' }, "additional properties 'controlRedisUrl' not allowed"],
    ['a zero pool size', { 'kvGateway.config.REDIS_POOL_SIZE': 0 }, "at '/kvGateway/config/REDIS_POOL_SIZE': minimum: got 0, want 1"],
    ['a bad digest', { 'kvGateway.image.digest': 'latest' }, "at '/kvGateway/image/digest': 'latest' does not match pattern"],
  ])('%s', (_, set, message) => {
    expect(renderError({ set })).toContain(message);
  });

  it('without a seal key source: neither existingSecret nor generate', () => {
    const error = renderError({ files: [], set: { 'controlRedis.url': 'redis://r:6379' } });
    expect(error).toContain("at '/registrySealKey': 'anyOf' failed");
    expect(error).toContain("at '/registrySealKey/generate': value must be true");
  });

  it('without a control Redis', () => {
    expect(renderError({ files: [], set: { 'registrySealKey.generate': true } })).toContain("at '/controlRedis': 'anyOf' failed");
  });
});

describe('_validate.tpl reports every cross-field problem at once', () => {
  it('lists each problem', () => {
    const error = renderError({
      set: {
        'controlRedis.existingSecret': 'ctl',
        'queueStore.redis.url': 'redis://q',
        'queueStore.redis.existingSecret': 'q',
        'queueStore.servers[0].name': 'main',
        'queueStore.servers[0].url': 'redis://q2',
        'queueStore.servers[1].name': 'q3',
        'kvGateway.enabled': false,
        'queueGateway.enabled': false,
      },
    });
    expect(error).toContain('restash: invalid values:');
    expect(error).toContain('controlRedis: set controlRedis.url or controlRedis.existingSecret, not both');
    expect(error).toContain('queueStore.redis: set queueStore.redis.url or queueStore.redis.existingSecret, not both');
    expect(error).toContain('queueStore.servers[0].name: main is used twice (main is queueStore.redis)');
    expect(error).toContain('queueStore.servers[1]: set url or existingSecret, one of them');
    expect(error).toContain('operator.gatewayUrls.kv: kvGateway is disabled, so the operator needs the URL of that gateway');
    expect(error).toContain('operator.gatewayUrls.queue: queueGateway is disabled');
    expect(error).toContain('queueWorker: delivers what queue-gateway stores');
  });
});

describe('helm lint --strict', () => {
  it.each(['ci/default-values.yaml', 'ci/test-cluster-values.yaml', 'ci/all-values.yaml'])('passes with %s', (file) => {
    const run = helm(['lint', '--strict', '.', '-f', file]);
    expect({ status: run.status, out: run.stdout.split('\n').filter((l) => /\[(WARNING|ERROR)\]/.test(l)) }).toEqual({ status: 0, out: [] });
  });

  it("fails on the chart's bare defaults, naming what is missing", () => {
    const run = helm(['lint', '--strict', '.']);
    expect(run.status).not.toBe(0);
    expect(run.stdout + run.stderr).toContain("at '/registrySealKey': 'anyOf' failed");
  });
});
