import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { serviceRegistry } from '@restash/shared/util-http';
import { exposedNames, lintMetrics, repoRoot, restashNamesIn } from '@restash/platform/util-stack';
import { OperatorMetrics } from './operator-metrics';

// The operator's /metrics needs a cluster to run; its registry is what that endpoint serves.
describe('OperatorMetrics', () => {
  const exposition = async () => {
    const registry = serviceRegistry();
    const metrics = new OperatorMetrics(registry);
    metrics.observe({ key: 'shop', outcome: 'done', durationMs: 120 });
    metrics.observe({ key: 'blog', outcome: 'error', durationMs: 3_000, retryInMs: 1_000 });
    metrics.queueDepth.set(2);
    metrics.leader.set(1);
    metrics.watchRestarts.inc({ kind: 'KvDatabase', reason: 'stale' });
    return registry.metrics();
  };

  it('counts passes by result, their durations in seconds, and the failed ones', async () => {
    const text = await exposition();
    expect(text).toContain('restash_operator_reconciles_total{result="error"} 1');
    expect(text).toContain('restash_operator_reconcile_duration_seconds_sum{result="error"} 3');
    expect(text).toContain('restash_operator_reconcile_errors_total 1');
    expect(text).toContain('restash_operator_queue_depth 2');
  });

  it('serves an exposition promtool check metrics finds clean (Prometheus naming conventions)', async () => {
    expect(await lintMetrics(await exposition())).toEqual([]);
  });

  it('has every restash_operator_* metric the alert rules and the Grafana dashboard query', async () => {
    const exposed = exposedNames(await exposition());
    for (const file of ['charts/restash/files/prometheus-rules.yaml', 'deploy/grafana/restash.json']) {
      const used = [...restashNamesIn(await readFile(join(repoRoot(), file), 'utf8'))].filter((n) => n.startsWith('restash_operator_'));
      expect(used.length).toBeGreaterThan(0);
      expect({ file, missing: used.filter((n) => !exposed.has(n)) }).toEqual({ file, missing: [] });
    }
  });
});
