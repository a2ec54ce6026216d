import { KubernetesListObject, KubernetesObject } from '@kubernetes/client-node';
import { type Cluster, startCluster } from '@restash/platform/util-stack';
import { eventually } from '@restash/shared/util-testing';
import { spawn } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { isNotFound } from './errors';
import { EventRecorder } from './events';
import { kubeConfigFrom } from './kube-config';
import { KindInfo, KubernetesClient } from './kubernetes-client';
import { LeaderElector } from './leader-election';
import { watchResources, WatchEventType } from './watch';

// Against a real API server: deploy/k8s/cluster.sh up --control-plane-only (etcd, kube-apiserver,
// kube-controller-manager; a few seconds once the binaries are built). One cluster per host.

jest.setTimeout(180_000);

/** A throw-away custom resource with a status subresource, so these tests need no CRD of the project. */
const WIDGET: KindInfo = { group: 'test.restash.dev', version: 'v1', plural: 'widgets' };
const WIDGET_API = `${WIDGET.group}/${WIDGET.version}`;
const widgetCrd = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `${WIDGET.plural}.${WIDGET.group}` },
  spec: {
    group: WIDGET.group,
    names: { kind: 'Widget', plural: WIDGET.plural, singular: 'widget', listKind: 'WidgetList' },
    scope: 'Namespaced',
    versions: [
      {
        name: WIDGET.version,
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              // `default` and `x-kubernetes-*`: JSON names client-node's typed models would drop.
              spec: { type: 'object', properties: { size: { type: 'integer', default: 1 } }, 'x-kubernetes-preserve-unknown-fields': true },
              status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
            },
          },
        },
      },
    ],
  },
};

interface Widget extends KubernetesObject {
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}

const NS = 'operator-lib-test';

describe('data-access-kubernetes against a real API server', () => {
  let cluster: Cluster;
  let kube: KubernetesClient;

  const widget = (name: string, spec: Record<string, unknown> = {}): Widget => ({ apiVersion: WIDGET_API, kind: 'Widget', metadata: { name, namespace: NS }, spec });
  const readWidget = (name: string) =>
    kube.customObjects.getNamespacedCustomObject({ group: WIDGET.group, version: WIDGET.version, plural: WIDGET.plural, namespace: NS, name }) as Promise<Widget>;
  const listWidgets = () =>
    kube.customObjects.listCustomObjectForAllNamespaces({ group: WIDGET.group, version: WIDGET.version, resourcePlural: WIDGET.plural }) as Promise<KubernetesListObject<Widget>>;

  beforeAll(async () => {
    cluster = await startCluster({ controlPlaneOnly: true });
    kube = new KubernetesClient(kubeConfigFrom({ KUBECONFIG: cluster.kubeconfig }));
    await kube.serverSideApply({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    const crd = await kube.serverSideApply(widgetCrd);
    expect(crd.metadata?.name).toBe('widgets.test.restash.dev');
    await eventually(async () => {
      const stored = (await kube.objects.read({ apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'widgets.test.restash.dev' } })) as {
        status?: { conditions?: Array<{ type: string; status: string }> };
      };
      expect(stored.status?.conditions?.find((c) => c.type === 'Established')?.status).toBe('True');
    }, 30_000);
  });

  afterAll(async () => {
    await cluster?.stop();
  });

  it('server-side apply creates, is idempotent, updates, and removes the fields it stops applying', async () => {
    const desired: KubernetesObject & { data?: Record<string, string> } = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'ssa', namespace: NS, labels: { a: '1' } },
      data: { one: '1', two: '2' },
    };
    const created = await kube.serverSideApply(desired);
    expect(created).toMatchObject({ data: { one: '1', two: '2' }, metadata: { labels: { a: '1' } } });
    const again = await kube.serverSideApply(desired);
    expect(again.metadata?.resourceVersion).toBe(created.metadata?.resourceVersion);

    // Another manager owns a field of its own; ours goes away when we stop applying it, theirs stays.
    await kube.serverSideApply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ssa', namespace: NS }, data: { theirs: 'x' } }, 'someone-else');
    const updated = (await kube.serverSideApply({ ...desired, data: { one: 'uno' } })) as typeof desired;
    expect(updated.data).toEqual({ one: 'uno', theirs: 'x' });
    expect(updated.metadata?.labels).toEqual({ a: '1' });

    // force: a field someone else set is taken over instead of failing with 409.
    await kube.serverSideApply({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'ssa', namespace: NS }, data: { theirs: 'x', one: 'theirs' } }, 'someone-else');
    const forced = (await kube.serverSideApply({ ...desired, data: { one: 'uno' } })) as typeof desired;
    expect(forced.data?.one).toBe('uno');

    // The body is sent as written: the CRD kept `default` and `x-kubernetes-preserve-unknown-fields`.
    const applied = await kube.serverSideApply(widget('defaults'));
    expect((applied as Widget).spec).toEqual({ size: 1 });
  });

  it('patches the status subresource only', async () => {
    const created = await kube.serverSideApply(widget('status', { size: 3 }));
    const conditions = [{ type: 'Ready', status: 'True', reason: 'Ready', message: 'ok', lastTransitionTime: '2026-03-01T10:00:00Z' }];
    const patched = await kube.patchStatus<Widget>(WIDGET, NS, 'status', { observedGeneration: created.metadata?.generation, conditions });
    expect(patched.status).toEqual({ observedGeneration: 1, conditions });
    const stored = await readWidget('status');
    expect(stored.spec).toEqual({ size: 3 });
    expect(stored.metadata?.generation).toBe(1); // status writes do not bump the generation
    // A merge patch replaces lists whole.
    await kube.patchStatus(WIDGET, NS, 'status', { conditions: [] });
    expect((await readWidget('status')).status?.conditions).toEqual([]);
    await expect(kube.patchStatus(WIDGET, NS, 'missing', {})).rejects.toHaveProperty('code', 404);
  });

  it('adds and removes a finalizer, refusing a stale object, and deletion waits for it', async () => {
    const created = await kube.serverSideApply(widget('final'));
    const withFinalizer = await kube.addFinalizer(created, 'restash.dev/cleanup');
    expect(withFinalizer.metadata?.finalizers).toEqual(['restash.dev/cleanup']);
    expect(await kube.addFinalizer(withFinalizer, 'restash.dev/cleanup')).toBe(withFinalizer); // no request
    // A second writer's finalizer is not lost: writing from the stale copy fails with 409.
    const other = await kube.addFinalizer(withFinalizer, 'example.com/other');
    await expect(kube.patchFinalizers(withFinalizer, [])).rejects.toHaveProperty('code', 409);
    expect(other.metadata?.finalizers).toEqual(['restash.dev/cleanup', 'example.com/other']);

    await kube.objects.delete(other);
    const deleting = await readWidget('final');
    expect(deleting.metadata?.deletionTimestamp).toBeDefined();
    const left = await kube.removeFinalizer(deleting, 'example.com/other');
    expect(left.metadata?.finalizers).toEqual(['restash.dev/cleanup']);
    await kube.removeFinalizer(left, 'restash.dev/cleanup');
    await eventually(async () => expect(await readWidget('final').then(() => 'present', (e: unknown) => (isNotFound(e) ? 'gone' : e))).toBe('gone'), 10_000);
  });

  it('records Events, counting a repeated one instead of creating another', async () => {
    const involved = await kube.serverSideApply(widget('events'));
    const recorder = new EventRecorder(kube.core, { instance: 'test-pod' });
    await recorder.record(involved, 'Warning', 'BackendError', 'kafka unreachable');
    await recorder.record(involved, 'Warning', 'BackendError', 'kafka unreachable');
    await recorder.record(involved, 'Normal', 'Ready', 'reconciled');
    const events = await kube.core.listNamespacedEvent({ namespace: NS, fieldSelector: `involvedObject.uid=${involved.metadata?.uid}` });
    const summary = events.items.map((e) => [e.type, e.reason, e.message, e.count, e.involvedObject.kind, e.involvedObject.name, e.reportingComponent, e.reportingInstance]);
    expect(summary.sort()).toEqual([
      ['Normal', 'Ready', 'reconciled', 1, 'Widget', 'events', 'restash-operator', 'test-pod'],
      ['Warning', 'BackendError', 'kafka unreachable', 2, 'Widget', 'events', 'restash-operator', 'test-pod'],
    ]);
  });

  describe('watchResources', () => {
    const path = `/apis/${WIDGET_API}/${WIDGET.plural}`;
    let seen: Array<[WatchEventType, string, string | undefined]>;
    let errors: unknown[];
    let restarts: string[];
    const start = (options: { resyncMs?: number; staleAfterMs?: number; restartMaxMs?: number } = {}) =>
      watchResources<Widget>({
        config: kube.config,
        path,
        list: listWidgets,
        onEvent: (type, o) => seen.push([type, o.metadata?.name ?? '', (o.spec as { size?: number } | undefined)?.size?.toString()]),
        onError: (e) => errors.push(e),
        onRestart: (reason) => restarts.push(reason),
        ...options,
      });
    const saw = (type: WatchEventType, name: string, size?: string) =>
      seen.some(([t, n, s]) => t === type && n === name && (size === undefined || s === size));

    beforeEach(() => {
      seen = [];
      errors = [];
      restarts = [];
    });

    it('syncs, then reports add, update and delete, and replays the cache on resync', async () => {
      await kube.serverSideApply(widget('before', { size: 1 }));
      const watch = start({ resyncMs: 1_500 });
      try {
        await watch.synced;
        expect(saw('add', 'before')).toBe(true);
        expect(watch.cache.list(NS).map((o) => o.metadata?.name)).toContain('before');
        expect(watch.cache.get('before', NS)?.spec).toEqual({ size: 1 });
        expect(watch.cache.list('other-namespace')).toEqual([]);

        await kube.serverSideApply(widget('w1', { size: 1 }));
        await eventually(() => expect(saw('add', 'w1', '1')).toBe(true), 10_000);
        await kube.serverSideApply(widget('w1', { size: 2 }));
        await eventually(() => expect(saw('update', 'w1', '2')).toBe(true), 10_000);
        await kube.objects.delete(widget('w1'));
        await eventually(() => expect(saw('delete', 'w1')).toBe(true), 10_000);
        expect(watch.cache.get('w1', NS)).toBeUndefined();

        seen = [];
        await eventually(() => expect(saw('resync', 'before')).toBe(true), 5_000);
        expect(saw('resync', 'w1')).toBe(false);
        expect(errors).toEqual([]);
        expect(watch.restarts).toBe(0);
      } finally {
        await watch.stop();
      }
      const stoppedAt = seen.length;
      await kube.serverSideApply(widget('after-stop'));
      await new Promise((r) => setTimeout(r, 2_000));
      expect(seen.slice(stoppedAt).filter(([, n]) => n === 'after-stop')).toEqual([]);
    });

    it('restarts after the API server restarts and reports what changed meanwhile', async () => {
      await kube.serverSideApply(widget('survivor', { size: 1 }));
      await kube.serverSideApply(widget('doomed', { size: 1 }));
      // Restarts back off 1 s, 2 s, 4 s: on a loaded machine the API server may take a while to come back.
      const watch = start({ resyncMs: 0, restartMaxMs: 4_000 });
      try {
        await watch.synced;
        await restartApiServer(cluster, async () => {
          await eventually(() => expect(errors.length).toBeGreaterThan(0), 30_000);
        });
        await waitForApiServer(kube);
        // Changes right after the restart arrive, whichever informer generation delivers them.
        await kube.serverSideApply(widget('survivor', { size: 2 }));
        await kube.objects.delete(widget('doomed'));
        await kube.serverSideApply(widget('newborn', { size: 1 }));
        await eventually(
          () => {
            expect(saw('update', 'survivor', '2')).toBe(true);
            expect(saw('delete', 'doomed')).toBe(true);
            expect(saw('add', 'newborn', '1')).toBe(true);
          },
          60_000,
          200,
        );
        expect(watch.restarts).toBeGreaterThan(0);
        expect(restarts).toContain('error');
        expect(watch.cache.get('doomed', NS)).toBeUndefined();
        expect(watch.cache.get('survivor', NS)?.spec).toEqual({ size: 2 });
      } finally {
        await watch.stop();
      }
    });

    it('restarts a watch whose list hangs (API server paused), without events for unchanged objects', async () => {
      await kube.serverSideApply(widget('steady', { size: 5 }));
      const pid = await apiServerPid(cluster);
      process.kill(pid, 'SIGSTOP');
      const watch = start({ resyncMs: 0, staleAfterMs: 2_000 });
      try {
        await eventually(() => expect(restarts).toContain('stale'), 20_000);
      } finally {
        process.kill(pid, 'SIGCONT');
      }
      try {
        await watch.synced;
        await kube.serverSideApply(widget('after-pause', { size: 7 }));
        await eventually(() => expect(saw('add', 'after-pause', '7')).toBe(true), 30_000, 200);
        // A quiet watch with staleAfterMs under the library's 30 s reconnect keeps being restarted:
        // each restart relists, and unchanged objects produce no event.
        const before = watch.restarts;
        await eventually(() => expect(watch.restarts).toBeGreaterThan(before + 1), 20_000, 200);
        expect(seen.filter(([, name]) => name === 'steady')).toEqual([['add', 'steady', '5']]);
        expect(seen.filter(([, name]) => name === 'after-pause')).toEqual([['add', 'after-pause', '7']]);
      } finally {
        await watch.stop();
      }
    });
  });

  describe('LeaderElector', () => {
    it('elects exactly one of two candidates; the other takes over when the leader stops', async () => {
      const lease = { coordination: kube.coordination, namespace: NS, name: 'operator-leader', leaseDurationSec: 4, renewDeadlineSec: 3, retryPeriodSec: 0.5 };
      const log: string[] = [];
      const a = new LeaderElector({ ...lease, identity: 'a' });
      const b = new LeaderElector({ ...lease, identity: 'b' });
      const runs = [a, b].map((elector, i) =>
        elector.run({
          onStartedLeading: () => void log.push(`${'ab'[i]} started`),
          onStoppedLeading: () => void log.push(`${'ab'[i]} stopped`),
        }),
      );
      try {
        await eventually(() => expect(a.isLeader || b.isLeader).toBe(true), 15_000);
        // Over several renew periods: never two leaders, never a change of leader.
        const first = a.isLeader ? a : b;
        for (let i = 0; i < 20; i++) {
          expect([a.isLeader, b.isLeader].filter(Boolean)).toHaveLength(1);
          expect(first.isLeader).toBe(true);
          await new Promise((r) => setTimeout(r, 250));
        }
        const holder = (await kube.coordination.readNamespacedLease({ namespace: NS, name: 'operator-leader' })).spec?.holderIdentity;
        const [leader, standby, leaderName, standbyName] = first === a ? [a, b, 'a', 'b'] : [b, a, 'b', 'a'];
        expect(holder).toBe(leaderName);

        const stoppedAt = Date.now();
        await leader.stop();
        expect(leader.isLeader).toBe(false);
        expect(log).toContain(`${leaderName} stopped`);
        await eventually(() => expect(standby.isLeader).toBe(true), 10_000, 50);
        // Released, not expired: the standby takes over within a retry period or two, not a lease duration.
        expect(Date.now() - stoppedAt).toBeLessThan(3_000);
        const taken = (await kube.coordination.readNamespacedLease({ namespace: NS, name: 'operator-leader' })).spec;
        expect(taken?.holderIdentity).toBe(standbyName);
        expect(taken?.leaseTransitions).toBe(1); // created by the first (0); released (kept); taken by the second (+1)
        expect(log).toEqual([`${leaderName} started`, `${leaderName} stopped`, `${standbyName} started`]);
      } finally {
        await Promise.all([a.stop(), b.stop()]);
        await Promise.all(runs);
      }
    });
  });
});

/** The kube-apiserver's pid, from cluster.sh's pid file (`<pid> <start time>`). */
async function apiServerPid(cluster: Cluster): Promise<number> {
  const [pid] = (await readFile(join(cluster.stateDir, 'run/kube-apiserver.pid'), 'utf8')).trim().split(/\s+/);
  return Number(pid);
}

/** Field 22 of /proc/<pid>/stat (start time in clock ticks), what cluster.sh's pid files pair with the pid. */
async function startTime(pid: number): Promise<string> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] as string;
}

/**
 * Kills the kube-apiserver (SIGKILL: a crash; on SIGTERM it stops listening at once but holds open
 * watches for its 60 s shutdown deadline), runs `whileDown`, and starts it again with the same
 * command line, recording the new process in cluster.sh's pid file so `cluster.sh down` stops it.
 */
async function restartApiServer(cluster: Cluster, whileDown: () => Promise<void>): Promise<void> {
  const pid = await apiServerPid(cluster);
  const argv = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0').filter(Boolean);
  process.kill(pid, 'SIGKILL');
  await eventually(async () => {
    const state = await readFile(`/proc/${pid}/stat`, 'utf8').then((s) => s.slice(s.lastIndexOf(')') + 2, s.lastIndexOf(')') + 3), () => 'gone');
    expect(['gone', 'Z']).toContain(state);
  }, 10_000, 50);
  await whileDown();
  const log = openSync(join(cluster.stateDir, 'logs/kube-apiserver.log'), 'a');
  try {
    const child = spawn(argv[0] as string, argv.slice(1), { detached: true, stdio: ['ignore', log, log] });
    child.unref();
    await writeFile(join(cluster.stateDir, 'run/kube-apiserver.pid'), `${child.pid} ${await startTime(child.pid as number)}\n`);
  } finally {
    closeSync(log);
  }
}

/** Until the API server answers for the test kind (after a start it serves 503 until its CRD paths are installed). */
async function waitForApiServer(kube: KubernetesClient): Promise<void> {
  await eventually(() => kube.customObjects.listNamespacedCustomObject({ ...WIDGET, namespace: NS }), 60_000, 250);
}
