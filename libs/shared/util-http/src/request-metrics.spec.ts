import { Counter, Registry } from 'prom-client';
import { RequestMetrics, labelChildren, labelledCounter } from './request-metrics';

describe('RequestMetrics', () => {
  it('names every API’s request histogram and backend error counter alike, with the operation label', async () => {
    const registry = new Registry();
    const metrics = new RequestMetrics(registry, { api: 'demo', title: 'Demo REST', backends: { engine: 'the engine', registry: 'the control Redis' } });
    metrics.observeRequest('acme', 'query', 200, 0.003);
    metrics.observeRequest('acme', 'query', 200, 0.2);
    metrics.backendError('acme', 'engine');
    const text = await registry.metrics();
    expect(text).toMatch(/restash_demo_request_duration_seconds_count\{tenant="acme",operation="query",status="200"\} 2/);
    expect(text).toMatch(/restash_demo_request_duration_seconds_bucket\{le="0.0005",tenant="acme",operation="query",status="200"\} 0/);
    expect(text).toMatch(/restash_demo_request_duration_seconds_bucket\{le="30",tenant="acme",operation="query",status="200"\} 2/);
    expect(text).toMatch(/restash_demo_backend_errors_total\{tenant="acme",kind="engine"\} 1/);
    expect(text).toContain('# HELP restash_demo_backend_errors_total Failures of the engine (engine), the control Redis (registry)');
  });
});

describe('labelChildren and labelledCounter', () => {
  it('hand out one child per label values, created once, of a counter (labelledCounter registers its own)', async () => {
    const registry = new Registry();
    const child = labelChildren(new Counter({ name: 'demo_total', help: 'demo', labelNames: ['a', 'b'], registers: [registry] }));
    const count = labelledCounter(registry, 'demo_events_total', 'Demo events', ['tenant', 'kind']);
    expect(child('x', 'y')).toBe(child('x', 'y'));
    expect(count('acme', 'x')).toBe(count('acme', 'x'));
    child('x y', '').inc();
    child('x', ' y').inc(2);
    count('acme', 'x').inc(3);
    const text = await registry.metrics();
    expect(text).toContain('demo_total{a="x y",b=""} 1');
    expect(text).toContain('demo_total{a="x",b=" y"} 2');
    expect(text).toContain('# HELP demo_events_total Demo events');
    expect(text).toContain('demo_events_total{tenant="acme",kind="x"} 3');
    // Counts between scrapes are added once each: the next scrape shows the total.
    count('acme', 'x').inc();
    count('acme', 'y').inc();
    const again = await registry.metrics();
    expect(again).toContain('demo_events_total{tenant="acme",kind="x"} 4');
    expect(again).toContain('demo_events_total{tenant="acme",kind="y"} 1');
    expect(await registry.metrics()).toContain('demo_events_total{tenant="acme",kind="x"} 4');
  });
});
