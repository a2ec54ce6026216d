// The chart against the apps' configuration schemas (apps/<app>/src/config.ts), so the two cannot drift: every
// variable a Deployment sets is one its app reads and its value passes the app's own check, every required one is
// set, every variable the app reads is reachable from the values, and values.yaml's defaults are the apps'.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import type { z } from 'zod';
import { kvGatewayEnvSchema } from '../../../apps/kv-gateway/src/config';
import { vectorGatewayEnvSchema } from '../../../apps/vector-gateway/src/config';
import { streamGatewayEnvSchema } from '../../../apps/stream-gateway/src/config';
import { queueGatewayEnvSchema } from '../../../apps/queue-gateway/src/config';
import { queueWorkerEnvSchema } from '../../../apps/queue-worker/src/config';
import { operatorEnvSchema } from '../../../apps/operator/src/config';
import { APPS, CHART_DIR, containerEnv, find, render } from './helm';

/** Each app's env schema: a zod object piped into a transform; `.in` is the object of variables. */
const SCHEMAS: Record<(typeof APPS)[number]['key'], z.ZodObject> = {
  kvGateway: kvGatewayEnvSchema.in,
  vectorGateway: vectorGatewayEnvSchema.in,
  streamGateway: streamGatewayEnvSchema.in,
  queueGateway: queueGatewayEnvSchema.in,
  queueWorker: queueWorkerEnvSchema.in,
  operator: operatorEnvSchema.in,
};

const values = parse(readFileSync(join(CHART_DIR, 'values.yaml'), 'utf8')) as Record<string, { config: Record<string, unknown> }>;
const byDefault = render();
const everyOption = render({ files: ['ci/test-cluster-values.yaml', 'ci/all-values.yaml'] });

describe.each(APPS)('$component', ({ key, component }) => {
  const shape = SCHEMAS[key].shape as Record<string, z.ZodType>;
  const envOf = (objects: typeof byDefault) => containerEnv(find(objects, 'Deployment', `restash-${component}`));

  it.each([
    ['default values', byDefault],
    ['every option on', everyOption],
  ])('sets only variables the app reads, each valid by its schema (%s)', (_, objects) => {
    const env = envOf(objects);
    for (const entry of env) {
      // A variable that only feeds another's value through Kubernetes' `$(NAME)` (a queue server's URL from its Secret, in QUEUE_REDIS_SERVERS).
      const feeds = env.some((other) => other.value?.includes(`$(${entry.name})`));
      expect({ variable: entry.name, known: entry.name in shape || feeds }).toEqual({ variable: entry.name, known: true });
      if (entry.value !== undefined) {
        // `$(NAME)` of a variable from a Secret, whose value the chart cannot see: only queue servers' Redis URLs are.
        const expanded = entry.value.replace(/\$\(([A-Z0-9_]+)\)/g, (_, name: string) => env.find((e) => e.name === name)?.value ?? 'redis://from-a-secret:6379');
        const parsed = shape[entry.name]?.safeParse(expanded);
        expect({ variable: entry.name, value: entry.value, error: parsed?.success ? undefined : parsed?.error.issues[0]?.message }).toEqual({ variable: entry.name, value: entry.value, error: undefined });
      }
    }
  });

  it('sets every variable the app requires (no default), with default values', () => {
    const set = new Set(envOf(byDefault).map((e) => e.name));
    const required = Object.keys(shape).filter((name) => !shape[name]?.safeParse(undefined).success);
    expect(required.length).toBeGreaterThan(0);
    expect(required.filter((name) => !set.has(name))).toEqual([]);
  });

  it('reaches every variable the app reads from some value (a new variable fails here until the chart maps it)', () => {
    const set = new Set([...envOf(byDefault), ...envOf(everyOption)].map((e) => e.name));
    expect(Object.keys(shape).filter((name) => !set.has(name))).toEqual([]);
  });

  it("has the app's defaults in values.yaml's config", () => {
    const config = values[key]?.config ?? {};
    expect(Object.keys(config).length).toBeGreaterThan(0);
    for (const [name, value] of Object.entries(config)) {
      const fallback = shape[name]?.safeParse(undefined);
      expect({ name, value }).toEqual({ name, value: fallback?.success ? fallback.data : '(no default in the schema)' });
    }
  });
});
