import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'yaml';
import { repoRoot } from './paths';
import { promtool } from './prometheus';

const RULES = 'charts/restash/files/prometheus-rules.yaml';
const RULE_TESTS = 'deploy/prometheus/rules.test.yaml';
const DASHBOARD = 'deploy/grafana/restash.json';

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

describe('the alert rules (charts/restash/files/prometheus-rules.yaml) and the Grafana dashboard', () => {
  const root = repoRoot();
  const rules = async () => (parse(await readFile(join(root, RULES), 'utf8')) as { groups: Array<{ rules: Rule[] }> }).groups.flatMap((g) => g.rules);

  it('pass promtool check rules', async () => {
    const result = await promtool(['check', 'rules', join(root, RULES)]);
    expect({ code: result.code, output: `${result.stdout}${result.stderr}` }).toEqual({ code: 0, output: expect.stringContaining('SUCCESS') });
  });

  it('pass their unit tests (promtool test rules deploy/prometheus/rules.test.yaml)', async () => {
    const result = await promtool(['test', 'rules', join(root, RULE_TESTS)]);
    expect({ code: result.code, output: `${result.stdout}${result.stderr}` }).toEqual({ code: 0, output: expect.stringContaining('SUCCESS') });
  });

  it('give every alert a for, a severity and a summary and description, and a test where it fires and one where it does not', async () => {
    const tests = (parse(await readFile(join(root, RULE_TESTS), 'utf8')) as { tests: Array<{ alert_rule_test?: Array<{ alertname: string; exp_alerts?: unknown[] }> }> }).tests.flatMap(
      (t) => t.alert_rule_test ?? [],
    );
    const alerts = (await rules()).filter((r) => r.alert);
    expect(alerts.length).toBeGreaterThanOrEqual(8);
    for (const rule of alerts) {
      const name = rule.alert as string;
      expect({ name, for: rule.for, severity: rule.labels?.severity }).toEqual({ name, for: expect.stringMatching(/^\d+m$/), severity: expect.stringMatching(/^(warning|critical)$/) });
      expect({ name, summary: Boolean(rule.annotations?.summary), description: Boolean(rule.annotations?.description) }).toEqual({ name, summary: true, description: true });
      const cases = tests.filter((t) => t.alertname === name);
      expect({ name, fires: cases.some((t) => (t.exp_alerts ?? []).length > 0), quiet: cases.some((t) => (t.exp_alerts ?? []).length === 0) }).toEqual({ name, fires: true, quiet: true });
    }
  });

  it('the dashboard is Grafana JSON whose every panel queries Prometheus through the datasource variable', async () => {
    const dashboard = JSON.parse(await readFile(join(root, DASHBOARD), 'utf8')) as {
      uid: string;
      panels: Array<{ type: string; title: string; datasource?: { uid: string }; targets?: Array<{ expr: string }> }>;
    };
    expect(dashboard.uid).toBe('restash');
    const graphs = dashboard.panels.filter((p) => p.type !== 'row');
    expect(graphs.length).toBeGreaterThanOrEqual(10);
    for (const panel of graphs) {
      expect({ title: panel.title, datasource: panel.datasource?.uid, queries: (panel.targets ?? []).filter((t) => t.expr.trim()).length > 0 }).toEqual({
        title: panel.title,
        datasource: '${datasource}',
        queries: true,
      });
    }
  });
});
