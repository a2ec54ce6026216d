import { join } from 'node:path';
import { type Cluster, repoRoot, startCluster } from '@restash/platform/util-stack';
import { API_VERSION, KINDS, type KindName } from './kinds';
import { RULE_CASES, TRANSITION_CASES } from './testing/rule-cases';

// The CRDs of deploy/crds on a real API server (deploy/k8s/cluster.sh, control plane only): it accepts
// them, and its verdict on every rule case (CEL rules, list-map keys, strict fields) is the zod schema's.
describe('deploy/crds on the API server', () => {
  let cluster: Cluster;
  const manifest = (kind: KindName, name: string, spec: Record<string, unknown>) =>
    JSON.stringify({ apiVersion: API_VERSION, kind, metadata: { name, namespace: 'default' }, spec });
  /** Whether `kubectl args -f -` of `input` succeeds, and its output or error. */
  const accepts = (args: string[], input: string) =>
    cluster.kubectl([...args, '-f', '-'], input).then(
      (out) => ({ ok: true, out }),
      (error: unknown) => ({ ok: false, out: String(error) }),
    );

  beforeAll(async () => {
    cluster = await startCluster({ controlPlaneOnly: true });
    await cluster.kubectl(['apply', '--server-side', '-f', join(repoRoot(), 'deploy/crds')]);
    await cluster.kubectl(['wait', '--for=condition=Established', '--timeout=60s', ...Object.values(KINDS).map((k) => `crd/${k.plural}.restash.dev`)]);
  }, 600_000);

  afterAll(async () => {
    await cluster?.stop();
  }, 120_000);

  it.each(RULE_CASES.map((c, i) => ({ ...c, i })))('$kind: $what → valid $valid, as zod says', async ({ kind, spec, valid, i }) => {
    expect(KINDS[kind].spec.safeParse(spec).success).toBe(valid);
    const result = await accepts(['apply', '--dry-run=server', '--validate=strict'], manifest(kind, `case-${i}`, spec));
    expect({ valid: result.ok, out: result.ok ? '' : result.out }).toMatchObject({ valid });
  });

  it.each(TRANSITION_CASES.map((c, i) => ({ ...c, i })))('$kind: $what → valid $valid', async ({ kind, old, new: next, valid, i }) => {
    const name = `transition-${i}`;
    await cluster.kubectl(['create', '-f', '-'], manifest(kind, name, old));
    try {
      const result = await accepts(['replace'], manifest(kind, name, next));
      expect({ valid: result.ok, out: result.out }).toMatchObject({ valid });
    } finally {
      await cluster.kubectl(['delete', KINDS[kind].plural, name, '-n', 'default', '--wait=false']);
    }
  });

  it('fills in the defaults and prints the columns of KINDS', async () => {
    await cluster.kubectl(['create', '-f', '-'], manifest('QueueProject', 'columns', {}));
    const stored = JSON.parse(await cluster.kubectl(['get', 'qp', 'columns', '-n', 'default', '-o', 'json'])) as { spec: unknown };
    expect(stored.spec).toEqual(KINDS.QueueProject.spec.parse({}));
    const header = (await cluster.kubectl(['get', 'restash', '-n', 'default'])).split('\n')[0];
    expect(header?.split(/\s{2,}/)).toEqual(['NAME', 'READY', 'REASON', 'RETRIES', 'AGE']);
  });
});
