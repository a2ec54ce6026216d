// Template tests: every branch of charts/restash/templates, through `helm template` and the parsed YAML.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { APPS, CHART_DIR, K8sObject, REPO_ROOT, containerEnv, find, render } from './helm';

const kinds = (objects: K8sObject[]) => objects.map((o) => o.kind);
const envMap = (deployment: K8sObject) => Object.fromEntries(containerEnv(deployment).map((e) => [e.name, e.value ?? e.valueFrom]));
const podSpec = (deployment: K8sObject) => deployment['spec'].template.spec;
const container = (deployment: K8sObject) => podSpec(deployment).containers[0];

describe('default values (ci/default-values.yaml)', () => {
  const objects = render();

  it('renders the six apps and no optional object', () => {
    for (const kind of ['Deployment', 'Service', 'ServiceAccount', 'PodDisruptionBudget']) expect(kinds(objects).filter((k) => k === kind)).toHaveLength(6);
    for (const kind of ['Ingress', 'NetworkPolicy', 'ServiceMonitor', 'PrometheusRule']) expect(kinds(objects)).not.toContain(kind);
  });

  it.each(APPS)('$component: restricted security, probes on the management port, /tmp, no unavailable pod in a rollout', ({ component, api }) => {
    const deployment = find(objects, 'Deployment', `restash-${component}`);
    expect(deployment['spec'].strategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } });
    expect(podSpec(deployment).securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 65532, seccompProfile: { type: 'RuntimeDefault' } });
    expect(container(deployment).securityContext).toMatchObject({
      runAsNonRoot: true,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(container(deployment).livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'management' });
    expect(container(deployment).readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'management' });
    expect(container(deployment).startupProbe.httpGet).toEqual({ path: '/healthz', port: 'management' });
    expect(container(deployment).resources).toEqual({ requests: expect.objectContaining({ cpu: expect.any(String), memory: expect.any(String) }), limits: { memory: expect.any(String) } });
    expect(container(deployment).volumeMounts).toEqual([{ name: 'tmp', mountPath: '/tmp' }]);
    expect(podSpec(deployment).volumes).toEqual([{ name: 'tmp', emptyDir: { sizeLimit: '64Mi' } }]);
    // The operator talks to the API server, and so does queue-worker, which watches namespaces' addresses (inNamespaceDestinations).
    expect(podSpec(deployment).automountServiceAccountToken).toBe(component === 'operator' || component === 'queue-worker');
    expect(podSpec(deployment).topologySpreadConstraints).toEqual([
      {
        maxSkew: 1,
        topologyKey: 'kubernetes.io/hostname',
        whenUnsatisfiable: 'ScheduleAnyway',
        labelSelector: { matchLabels: deployment['spec'].selector.matchLabels },
      },
    ]);
    expect(Object.keys(deployment['spec'].template.metadata.annotations).sort()).toEqual(['checksum/config', 'checksum/values']);
    const service = find(objects, 'Service', `restash-${component}`);
    expect(service['spec'].ports.map((p: { name: string }) => p.name)).toEqual(api ? ['http', 'management'] : ['management']);
    expect(service['spec'].selector).toEqual(deployment['spec'].selector.matchLabels);
    expect(find(objects, 'PodDisruptionBudget', `restash-${component}`)['spec']).toEqual({ maxUnavailable: 1, selector: { matchLabels: deployment['spec'].selector.matchLabels } });
  });

  it('gives no Service session affinity (any stream-gateway replica serves any consumer instance), and the stream gateway its pod IP to be reached at by its peers', () => {
    for (const c of ['kv-gateway', 'vector-gateway', 'stream-gateway', 'queue-gateway']) expect(find(objects, 'Service', `restash-${c}`)['spec'].sessionAffinity).toBeUndefined();
    expect(envMap(find(objects, 'Deployment', 'restash-stream-gateway'))['PEER_HOST']).toEqual({ fieldRef: { fieldPath: 'status.podIP' } });
  });

  it('drains a terminating gateway for 5 s before SIGTERM (preStop GET /drain: answers close their connections); no hook for the worker and operator, or with 0', () => {
    for (const app of ['kv-gateway', 'vector-gateway', 'stream-gateway', 'queue-gateway']) {
      expect(container(find(objects, 'Deployment', `restash-${app}`)).lifecycle).toEqual({ preStop: { httpGet: { path: '/drain?seconds=5', port: 'management' } } });
    }
    for (const app of ['queue-worker', 'operator']) expect(container(find(objects, 'Deployment', `restash-${app}`)).lifecycle).toBeUndefined();
    expect(container(find(render({ set: { 'kvGateway.drainSeconds': '0' } }), 'Deployment', 'restash-kv-gateway')).lifecycle).toBeUndefined();
  });

  it('points the operator at the gateways by cluster DNS name and keeps the CRDs on uninstall', () => {
    const env = envMap(find(objects, 'Deployment', 'restash-operator'));
    expect(env['KV_GATEWAY_URL']).toBe('http://restash-kv-gateway.restash-system.svc.cluster.local:8080');
    expect(env['QUEUE_GATEWAY_URL']).toBe('http://restash-queue-gateway.restash-system.svc.cluster.local:8083');
    expect(env['MANAGED_REDIS_IMAGE']).toBe('docker.io/library/redis:7.4.2');
    for (const name of ['KAFKA_BROKERS', 'QDRANT_URL', 'QDRANT_API_KEY', 'EMBEDDING_URL', 'EMBEDDING_API_KEY']) expect(env[name]).toBeUndefined();
    const crds = objects.filter((o) => o.kind === 'CustomResourceDefinition');
    expect(crds.map((c) => c.metadata.name).sort()).toEqual(['kvbackups.restash.dev', 'kvdatabases.restash.dev', 'queueprojects.restash.dev', 'streamclusters.restash.dev', 'vectorindexes.restash.dev']);
    for (const crd of crds) expect(crd.metadata.annotations).toEqual({ 'helm.sh/resource-policy': 'keep' });
  });

  it('takes every image from the values with the appVersion as tag, as Chart.yaml annotations.images lists them', () => {
    const chart = parse(readFileSync(join(CHART_DIR, 'Chart.yaml'), 'utf8')) as { appVersion: string; annotations: { images: string } };
    expect(chart.appVersion).toBe((JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version);
    const listed = (parse(chart.annotations.images) as Array<{ image: string }>).map((i) => i.image).sort();
    const rendered = objects.filter((o) => o.kind === 'Deployment').map((d) => container(d).image as string);
    rendered.push(envMap(find(objects, 'Deployment', 'restash-operator'))['MANAGED_REDIS_IMAGE']);
    expect(rendered.sort()).toEqual(listed);
  });
});

describe('images', () => {
  it('uses global.imageRegistry, a tag, or a digest instead of the tag', () => {
    const objects = render({ set: { 'global.imageRegistry': 'registry.example:5000', 'vectorGateway.image.tag': '9.9.9', 'kvGateway.image.digest': `sha256:${'a'.repeat(64)}` } });
    expect(container(find(objects, 'Deployment', 'restash-kv-gateway')).image).toBe(`registry.example:5000/restash/kv-gateway@sha256:${'a'.repeat(64)}`);
    expect(container(find(objects, 'Deployment', 'restash-vector-gateway')).image).toBe('registry.example:5000/restash/vector-gateway:9.9.9');
    expect(envMap(find(objects, 'Deployment', 'restash-operator'))['MANAGED_REDIS_IMAGE']).toBe('registry.example:5000/library/redis:7.4.2');
  });
});

describe('Secrets and backends', () => {
  const secretRef = (objects: K8sObject[], component: string, name: string) => envMap(find(objects, 'Deployment', `restash-${component}`))[name].secretKeyRef;

  it('puts a control Redis URL given as a value into the chart Secret, and the queue store there too by default', () => {
    const objects = render();
    const secret = find(objects, 'Secret', 'restash-config');
    expect(Buffer.from(secret['data']['control-redis-url'], 'base64').toString()).toBe('redis://redis.example.svc.cluster.local:6379');
    for (const { component } of APPS) expect(secretRef(objects, component, 'CONTROL_REDIS_URL')).toEqual({ name: 'restash-config', key: 'control-redis-url' });
    for (const component of ['queue-gateway', 'queue-worker', 'operator']) expect(secretRef(objects, component, 'QUEUE_REDIS_URL')).toEqual({ name: 'restash-config', key: 'control-redis-url' });
  });

  it('reads URLs from existing Secrets and then renders no chart Secret', () => {
    const objects = render({ set: { 'controlRedis.url': '', 'controlRedis.existingSecret': 'ctl', 'queueStore.redis.existingSecret': 'q', 'queueStore.redis.existingSecretKey': 'u' } });
    expect(objects.filter((o) => o.kind === 'Secret' && o.metadata.name === 'restash-config')).toEqual([]);
    expect(secretRef(objects, 'kv-gateway', 'CONTROL_REDIS_URL')).toEqual({ name: 'ctl', key: 'url' });
    expect(secretRef(objects, 'queue-worker', 'QUEUE_REDIS_URL')).toEqual({ name: 'q', key: 'u' });
  });

  it('gives the queue store its own Redis URL', () => {
    const objects = render({ set: { 'queueStore.redis.url': 'redis://queue:6379' } });
    expect(Buffer.from(find(objects, 'Secret', 'restash-config')['data']['queue-redis-url'], 'base64').toString()).toBe('redis://queue:6379');
    expect(secretRef(objects, 'queue-gateway', 'QUEUE_REDIS_URL')).toEqual({ name: 'restash-config', key: 'queue-redis-url' });
  });

  it('gives queue-gateway and the operator every server of queueStore.servers, and each server a queue-worker of its own', () => {
    const objects = render({ files: ['ci/test-cluster-values.yaml', 'ci/all-values.yaml'] });
    expect(Buffer.from(find(objects, 'Secret', 'restash-config')['data']['queue-redis-url-q2'], 'base64').toString()).toBe('redis://queue-2.restash-engines.svc.cluster.local:6379');
    for (const component of ['queue-gateway', 'operator']) {
      const env = envMap(find(objects, 'Deployment', `restash-${component}`));
      expect(env['RESTASH_QUEUE_SERVER_URL_0']).toEqual({ secretKeyRef: { name: 'restash-config', key: 'queue-redis-url-q2' } });
      expect(env['RESTASH_QUEUE_SERVER_URL_1']).toEqual({ secretKeyRef: { name: 'queue-3', key: 'redis-url' } });
      expect(env['QUEUE_REDIS_SERVERS']).toBe('q2=$(RESTASH_QUEUE_SERVER_URL_0) q3=$(RESTASH_QUEUE_SERVER_URL_1)');
      // Kubernetes expands `$(NAME)` only from variables defined before it.
      const names = containerEnv(find(objects, 'Deployment', `restash-${component}`)).map((e) => e.name);
      expect(names.indexOf('RESTASH_QUEUE_SERVER_URL_1')).toBeLessThan(names.indexOf('QUEUE_REDIS_SERVERS'));
    }
    const main = find(objects, 'Deployment', 'restash-queue-worker');
    for (const [server, secretKeyRef] of [['q2', { name: 'restash-config', key: 'queue-redis-url-q2' }], ['q3', { name: 'queue-3', key: 'redis-url' }]] as const) {
      const worker = find(objects, 'Deployment', `restash-queue-worker-${server}`);
      const env = envMap(worker);
      expect(env['QUEUE_REDIS_URL']).toEqual({ secretKeyRef });
      expect(env['QUEUE_REDIS_SERVERS']).toBeUndefined();
      // queueWorker's settings, but its own name and labels.
      expect({ ...env, QUEUE_REDIS_URL: undefined }).toEqual({ ...envMap(main), QUEUE_REDIS_URL: undefined });
      expect(worker['spec'].selector.matchLabels['app.kubernetes.io/component']).toBe(`queue-worker-${server}`);
      expect(find(objects, 'Service', `restash-queue-worker-${server}`)['spec'].selector).toEqual(worker['spec'].selector.matchLabels);
      expect(podSpec(worker).serviceAccountName).toBe(`restash-queue-worker-${server}`);
    }
  });

  it('generates the registry seal key once (kept on uninstall) or reads an existing Secret', () => {
    const generated = find(render(), 'Secret', 'restash-registry-seal');
    expect(generated.metadata.annotations).toEqual({ 'helm.sh/resource-policy': 'keep' });
    expect(Buffer.from(Buffer.from(generated['data'].key, 'base64').toString(), 'base64')).toHaveLength(32);
    const existing = render({ files: ['ci/test-cluster-values.yaml'] });
    expect(existing.filter((o) => o.kind === 'Secret' && o.metadata.name === 'restash-registry-seal')).toEqual([]);
    for (const { component } of APPS) expect(secretRef(existing, component, 'REGISTRY_SEAL_KEY')).toEqual({ name: 'restash-seal', key: 'key' });
  });

  it('rolls the pods when a Secret the chart renders changes (checksum annotation)', () => {
    const checksum = (url: string) => find(render({ set: { 'controlRedis.url': url } }), 'Deployment', 'restash-kv-gateway')['spec'].template.metadata.annotations['checksum/config'];
    expect(checksum('redis://a:6379')).not.toBe(checksum('redis://b:6379'));
    expect(checksum('redis://a:6379')).toBe(checksum('redis://a:6379'));
  });

  it('gives the operator Kafka, Qdrant and the embedder, API keys from existing Secrets', () => {
    const env = envMap(find(render({ files: ['ci/test-cluster-values.yaml', 'ci/all-values.yaml'] }), 'Deployment', 'restash-operator'));
    expect(env['KAFKA_BROKERS']).toBe('kafka.restash-engines.svc.cluster.local:9092');
    expect(env['QDRANT_URL']).toBe('http://qdrant.restash-engines.svc.cluster.local:6333');
    expect(env['QDRANT_API_KEY']).toEqual({ secretKeyRef: { name: 'restash-qdrant', key: 'api-key' } });
    expect(env['EMBEDDING_API_KEY']).toEqual({ secretKeyRef: { name: 'restash-embedding', key: 'api-key' } });
    expect(env['KV_GATEWAY_URL']).toBe('https://kv.restash.example');
    expect(env['LEASE_NAME']).toBe('restash-operator-leader');
  });
});

describe('the test cluster values', () => {
  const objects = render({ files: ['ci/test-cluster-values.yaml'] });

  it('never pulls an image and runs the managed Redis as root on host-path storage', () => {
    for (const d of objects.filter((o) => o.kind === 'Deployment')) {
      expect(container(d).imagePullPolicy).toBe('Never');
      expect(container(d).image).toMatch(/^localhost\/restash\/[a-z-]+:0\.1\.0$/);
    }
    const env = envMap(find(objects, 'Deployment', 'restash-operator'));
    expect(env).toMatchObject({ MANAGED_REDIS_IMAGE: 'localhost/restash/redis:7.0.15', MANAGED_REDIS_PULL_POLICY: 'Never', MANAGED_REDIS_RUN_AS_USER: '0' });
    // No pod range allowlisted: the SDK Jobs reach their own pods through their QueueProject's destinations.inNamespace.
    expect(envMap(find(objects, 'Deployment', 'restash-queue-worker'))).toMatchObject({ IN_NAMESPACE_DESTINATIONS: 'true' });
    expect(envMap(find(objects, 'Deployment', 'restash-queue-worker'))['DESTINATION_ALLOWLIST']).toBeUndefined();
  });
});

describe('apps switched off', () => {
  it.each(APPS)('renders nothing of $component when disabled', ({ key, component }) => {
    const set: Record<string, string | boolean> = { [`${key}.enabled`]: false };
    if (key === 'queueGateway') set['queueWorker.enabled'] = false;
    const api = { kvGateway: 'kv', vectorGateway: 'vector', streamGateway: 'stream', queueGateway: 'queue' }[key as string];
    if (api) set[`operator.gatewayUrls.${api}`] = `https://${api}.example`;
    const objects = render({ set });
    expect(objects.filter((o) => o.metadata.name === `restash-${component}`)).toEqual([]);
  });
});

describe('queue-worker and in-namespace destinations', () => {
  it('lists and watches pods and Services cluster-wide, never reaching the release namespace, or none of it when off', () => {
    const objects = render();
    expect(find(objects, 'ClusterRole', 'restash-queue-worker')['rules']).toEqual([{ apiGroups: [''], resources: ['pods', 'services'], verbs: ['list', 'watch'] }]);
    expect(find(objects, 'ClusterRoleBinding', 'restash-queue-worker')['subjects']).toEqual([{ kind: 'ServiceAccount', name: 'restash-queue-worker', namespace: 'restash-system' }]);
    expect(envMap(find(objects, 'Deployment', 'restash-queue-worker'))).toMatchObject({ IN_NAMESPACE_DESTINATIONS: 'true', PLATFORM_NAMESPACES: 'restash-system' });
    const off = render({ set: { 'queueWorker.inNamespaceDestinations': false } });
    expect(off.filter((o) => o.metadata.name === 'restash-queue-worker' && /Role/.test(o.kind))).toEqual([]);
    const deployment = find(off, 'Deployment', 'restash-queue-worker');
    expect(envMap(deployment)['IN_NAMESPACE_DESTINATIONS']).toBeUndefined();
    expect(podSpec(deployment).automountServiceAccountToken).toBe(false);
  });
});

describe('operator RBAC', () => {
  it('grants only the verbs the operator uses, Leases in the release namespace only', () => {
    const objects = render();
    const role = find(objects, 'ClusterRole', 'restash-operator');
    expect(role['rules']).toEqual([
      { apiGroups: ['restash.dev'], resources: ['kvdatabases', 'vectorindexes', 'streamclusters', 'queueprojects'], verbs: ['list', 'watch', 'patch'] },
      { apiGroups: ['restash.dev'], resources: ['kvdatabases/status', 'vectorindexes/status', 'streamclusters/status', 'queueprojects/status'], verbs: ['patch'] },
      { apiGroups: ['restash.dev'], resources: ['kvdatabases/finalizers', 'vectorindexes/finalizers', 'streamclusters/finalizers', 'queueprojects/finalizers'], verbs: ['update'] },
      { apiGroups: ['restash.dev'], resources: ['kvbackups'], verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'] },
      { apiGroups: ['restash.dev'], resources: ['kvbackups/status'], verbs: ['patch'] },
      { apiGroups: [''], resources: ['secrets', 'services'], verbs: ['get', 'create', 'patch', 'delete'] },
      { apiGroups: ['apps'], resources: ['statefulsets'], verbs: ['get', 'create', 'patch', 'delete'] },
      { apiGroups: ['policy'], resources: ['poddisruptionbudgets'], verbs: ['create', 'patch', 'delete'] },
      // Rolling upgrades of replicated databases: their server pods listed and deleted one at a time.
      { apiGroups: [''], resources: ['pods'], verbs: ['list', 'delete'] },
      { apiGroups: [''], resources: ['persistentvolumeclaims'], verbs: ['get', 'patch', 'delete'] },
      { apiGroups: ['storage.k8s.io'], resources: ['storageclasses'], verbs: ['get'] },
      { apiGroups: [''], resources: ['events'], verbs: ['create', 'patch'] },
    ]);
    expect(find(objects, 'ClusterRoleBinding', 'restash-operator')['subjects']).toEqual([{ kind: 'ServiceAccount', name: 'restash-operator', namespace: 'restash-system' }]);
    const lease = find(objects, 'Role', 'restash-operator-leader-election');
    expect(lease.metadata.namespace).toBe('restash-system');
    expect(lease['rules']).toEqual([{ apiGroups: ['coordination.k8s.io'], resources: ['leases'], verbs: ['get', 'create', 'update'] }]);
    const env = envMap(find(objects, 'Deployment', 'restash-operator'));
    expect(env).toMatchObject({ LEADER_ELECTION: 'true', LEASE_NAMESPACE: 'restash-system', LEASE_NAME: 'restash-operator', POD_NAME: { fieldRef: { fieldPath: 'metadata.name' } } });
    // The managed databases' init containers (restore, replicas' configuration) run the operator's own image.
    const operator = find(objects, 'Deployment', 'restash-operator') as unknown as { spec: { template: { spec: { containers: Array<{ image: string }> } } } };
    expect(env['MANAGED_REDIS_INIT_IMAGE']).toBe(operator.spec.template.spec.containers[0]?.image);
    // Databases of engine valkey: the official Valkey image by default, none when its repository is emptied.
    expect(env['MANAGED_VALKEY_IMAGE']).toBe('docker.io/valkey/valkey:9.1.2');
    expect(envMap(find(render({ set: { 'operator.managedRedis.valkeyImage.repository': '' } }), 'Deployment', 'restash-operator'))['MANAGED_VALKEY_IMAGE']).toBeUndefined();
  });

  it('has no Lease Role without leader election and no RBAC when rbac.create is off', () => {
    const noElection = render({ set: { 'operator.leaderElection.enabled': false } });
    expect(noElection.filter((o) => o.kind === 'Role')).toEqual([]);
    const env = envMap(find(noElection, 'Deployment', 'restash-operator'));
    expect(env['LEADER_ELECTION']).toBe('false');
    expect(env['LEASE_NAME']).toBeUndefined();
    const none = render({ set: { 'operator.rbac.create': false } });
    expect(none.filter((o) => o.metadata.name.startsWith('restash-operator') && /Role/.test(o.kind))).toEqual([]);
  });

  it('aggregates the four kinds and KvBackups into admin, edit and view, or not', () => {
    const roles = render().filter((o) => o.kind === 'ClusterRole' && o.metadata.labels?.['rbac.authorization.k8s.io/aggregate-to-view'] !== undefined);
    expect(roles.map((r) => r.metadata.name)).toEqual(['restash-view']);
    const all = render().filter((o) => o.kind === 'ClusterRole' && Object.keys(o.metadata.labels ?? {}).some((l) => l.startsWith('rbac.authorization.k8s.io/aggregate-to-')));
    expect(all.map((r) => r.metadata.name)).toEqual(['restash-admin', 'restash-edit', 'restash-view']);
    expect(find(render(), 'ClusterRole', 'restash-view')['rules'][0].verbs).toEqual(['get', 'list', 'watch']);
    expect(render({ set: { 'rbac.aggregatedRoles': false } }).filter((o) => o.metadata.name === 'restash-view')).toEqual([]);
  });
});

describe('CRDs', () => {
  it("are deploy/crds' files byte for byte (make crds writes both)", () => {
    for (const file of ['restash.dev_kvbackups.yaml', 'restash.dev_kvdatabases.yaml', 'restash.dev_queueprojects.yaml', 'restash.dev_streamclusters.yaml', 'restash.dev_vectorindexes.yaml']) {
      expect({ file, text: readFileSync(join(CHART_DIR, 'files/crds', file), 'utf8') }).toEqual({ file, text: readFileSync(join(REPO_ROOT, 'deploy/crds', file), 'utf8') });
    }
  });

  it('render as deploy/crds plus the keep annotation, or not at all (crds.install=false)', () => {
    const rendered = render().filter((o) => o.kind === 'CustomResourceDefinition');
    for (const crd of rendered) {
      const source = parse(readFileSync(join(REPO_ROOT, 'deploy/crds', `restash.dev_${crd['spec'].names.plural}.yaml`), 'utf8')) as K8sObject;
      expect(crd).toEqual({ ...source, metadata: { ...source.metadata, annotations: { 'helm.sh/resource-policy': 'keep' } } });
    }
    expect(rendered).toHaveLength(5);
    expect(kinds(render({ set: { 'crds.install': false } }))).not.toContain('CustomResourceDefinition');
  });
});

describe('every option on (ci/all-values.yaml)', () => {
  const objects = render({ files: ['ci/test-cluster-values.yaml', 'ci/all-values.yaml'] });

  it('renders an Ingress rule per API to its gateway', () => {
    const ingress = find(objects, 'Ingress', 'restash');
    expect(ingress['spec'].ingressClassName).toBe('nginx');
    expect(ingress['spec'].rules.map((r: { host: string; http: { paths: Array<{ backend: { service: { name: string } } }> } }) => [r.host, r.http.paths[0]?.backend.service.name])).toEqual([
      ['kv.restash.example', 'restash-kv-gateway'],
      ['vector.restash.example', 'restash-vector-gateway'],
      ['stream.restash.example', 'restash-stream-gateway'],
      ['queue.restash.example', 'restash-queue-gateway'],
    ]);
    const kvOnly = render({ set: { 'ingress.enabled': true, 'ingress.kv.host': 'kv.example' } });
    expect(find(kvOnly, 'Ingress', 'restash')['spec'].rules.map((r: { host: string }) => r.host)).toEqual(['kv.example']);
  });

  it('renders a NetworkPolicy per app: API from the selected namespaces, metrics from monitoring, egress as given', () => {
    const kv = find(objects, 'NetworkPolicy', 'restash-kv-gateway');
    expect(kv['spec'].policyTypes).toEqual(['Ingress', 'Egress']);
    expect(kv['spec'].ingress).toEqual([
      { ports: [{ port: 'http', protocol: 'TCP' }], from: [{ namespaceSelector: { matchLabels: { 'restash.dev/tenant': 'true' } } }] },
      { ports: [{ port: 'management', protocol: 'TCP' }], from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }] },
    ]);
    expect(kv['spec'].egress).toHaveLength(3);
    expect(find(objects, 'NetworkPolicy', 'restash-operator')['spec'].ingress).toHaveLength(1);
    const open = find(render({ set: { 'networkPolicy.enabled': true } }), 'NetworkPolicy', 'restash-kv-gateway');
    expect(open['spec'].policyTypes).toEqual(['Ingress']);
    expect(open['spec'].ingress[0]).toEqual({ ports: [{ port: 'http', protocol: 'TCP' }] });
  });

  it('renders a ServiceMonitor per app on the management port and the PrometheusRule of files/prometheus-rules.yaml', () => {
    const monitors = objects.filter((o) => o.kind === 'ServiceMonitor');
    // The six apps and the queue-workers of queueStore.servers (q2, q3).
    expect(monitors.map((m) => m.metadata.name)).toEqual(expect.arrayContaining(['restash-queue-worker-q2', 'restash-queue-worker-q3']));
    expect(monitors).toHaveLength(8);
    const kv = find(objects, 'ServiceMonitor', 'restash-kv-gateway');
    expect(kv['spec'].endpoints[0]).toMatchObject({ port: 'management', path: '/metrics', interval: '15s', scrapeTimeout: '5s', honorLabels: true });
    expect(kv['spec'].selector.matchLabels).toEqual(find(objects, 'Service', 'restash-kv-gateway')['spec'].selector);
    expect(kv.metadata.labels?.['release']).toBe('prometheus');
    const rule = find(objects, 'PrometheusRule', 'restash');
    expect(rule['spec']).toEqual(parse(readFileSync(join(CHART_DIR, 'files/prometheus-rules.yaml'), 'utf8')));
  });

  it('applies the scheduling, metadata and PDB options', () => {
    const kv = find(objects, 'Deployment', 'restash-kv-gateway');
    const spec = podSpec(kv);
    expect(spec.nodeSelector).toEqual({ 'kubernetes.io/os': 'linux' });
    expect(spec.tolerations).toHaveLength(1);
    expect(spec.affinity.podAntiAffinity).toBeDefined();
    expect(spec.imagePullSecrets).toEqual([{ name: 'regcred' }]);
    expect(spec.terminationGracePeriodSeconds).toBe(45);
    expect(kv['spec'].strategy.rollingUpdate).toEqual({ maxUnavailable: 0, maxSurge: 2 });
    expect(kv['spec'].template.metadata.labels).toMatchObject({ tier: 'api', team: 'platform' });
    expect(kv['spec'].template.metadata.annotations['example.com/scrape']).toBe('false');
    expect(envMap(kv)).toMatchObject({ REDIS_POOL_SIZE: '4', LOG_LEVEL: 'debug', SSE_HEARTBEAT_MS: '5000' });
    expect(find(objects, 'PodDisruptionBudget', 'restash-kv-gateway')['spec'].minAvailable).toBe(1);
    expect(objects.filter((o) => o.kind === 'PodDisruptionBudget' && o.metadata.name === 'restash-queue-gateway')).toEqual([]);
    expect(find(objects, 'Service', 'restash-kv-gateway').metadata.annotations).toEqual({ 'example.com/service': 'kv', 'example.com/owner': 'platform' });
    expect(find(objects, 'ServiceAccount', 'restash-kv-gateway').metadata.annotations).toEqual({ 'example.com/role': 'kv', 'example.com/owner': 'platform' });
    expect(find(objects, 'Service', 'restash-vector-gateway')['spec'].type).toBe('NodePort');
    expect(container(find(objects, 'Deployment', 'restash-vector-gateway')).startupProbe).toBeUndefined();
    expect(find(objects, 'Service', 'restash-stream-gateway')['spec'].sessionAffinityConfig).toEqual({ clientIP: { timeoutSeconds: 3600 } });
    expect(podSpec(find(objects, 'Deployment', 'restash-stream-gateway')).topologySpreadConstraints[0].topologyKey).toBe('topology.kubernetes.io/zone');
    expect(envMap(find(objects, 'Deployment', 'restash-queue-worker'))['DESTINATION_ALLOWLIST']).toBe('10.244.0.0/24,fd00::/8');
    expect(podSpec(find(render({ set: { 'kvGateway.priorityClassName': 'high' } }), 'Deployment', 'restash-kv-gateway')).priorityClassName).toBe('high');
  });
});
