import { managedRedisAcl, managedRedisConfig, managedRedisNames, managedRedisObjects } from './managed-redis';
import { managedSentinelObjects } from './managed-sentinel';

const settings = { image: 'localhost/restash/redis:7.0.15', imagePullPolicy: 'Never' as const, runAsUser: 65532, cpuRequest: '50m', memoryRequest: '64Mi', memoryLimit: '256Mi' };
const input = {
  owner: { apiVersion: 'restash.dev/v1alpha1', kind: 'KvDatabase', name: '1cache', namespace: 'acme', uid: 'uid-7' },
  storage: '2Gi',
  password: 'p4ss',
};

describe('managedRedisObjects', () => {
  it('names every object with a letter first and owns each by the KvDatabase', () => {
    const [secret, headless, service, set] = managedRedisObjects(input, settings);
    expect([secret.metadata?.name, headless.metadata?.name, service.metadata?.name, set.metadata?.name]).toEqual([
      'redis-1cache',
      'redis-1cache-headless',
      'redis-1cache',
      'redis-1cache',
    ]);
    for (const object of [secret, headless, service, set]) {
      expect(object.metadata?.namespace).toBe('acme');
      expect(object.metadata?.ownerReferences).toEqual([
        { apiVersion: 'restash.dev/v1alpha1', kind: 'KvDatabase', name: '1cache', uid: 'uid-7', controller: true, blockOwnerDeletion: true },
      ]);
    }
    expect(managedRedisNames('1cache').pvc).toBe(`${set.spec?.volumeClaimTemplates?.[0]?.metadata?.name}-${set.metadata?.name}-0`);
  });

  it('runs one Redis with AOF, the ACL file from the Secret, a PVC deleted with it, and a locked-down container', () => {
    const [secret, headless, service, set] = managedRedisObjects(input, settings);
    expect(secret.stringData?.['redis.conf']).toContain('appendonly yes');
    expect(secret.stringData?.['redis.conf']).toContain('aclfile /etc/redis/users.acl');
    // Bounds of their own below the container's 256Mi: three quarters for data, a quarter for one client's replies.
    expect(secret.stringData?.['redis.conf']).toMatch(/^maxmemory 201326592$/m);
    expect(secret.stringData?.['redis.conf']).toMatch(/^maxmemory-policy noeviction$/m);
    expect(secret.stringData?.['redis.conf']).toMatch(/^client-output-buffer-limit normal 67108864 0 0$/m);
    expect(secret.stringData?.['users.acl']).toBe('user default off\nuser restash-gateway on >p4ss ~* &* +@all -migrate\n');
    expect(headless.spec?.clusterIP).toBe('None');
    expect(service.spec?.type).toBe('ClusterIP');
    const spec = set.spec;
    expect(spec?.replicas).toBe(1);
    expect(spec?.serviceName).toBe('redis-1cache-headless');
    expect(spec?.persistentVolumeClaimRetentionPolicy?.whenDeleted).toBe('Delete');
    expect(spec?.volumeClaimTemplates?.[0]?.spec?.resources?.requests).toEqual({ storage: '2Gi' });
    const pod = spec?.template.spec;
    expect(pod?.securityContext).toMatchObject({ runAsUser: 65532, runAsNonRoot: true, fsGroup: 65532 });
    const container = pod?.containers[0];
    expect(container?.imagePullPolicy).toBe('Never');
    expect(container?.securityContext).toEqual({ allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
    expect(pod?.volumes?.[0]?.secret?.secretName).toBe('redis-1cache');
    // The password is kept in the Secret for the operator, but only the two files are mounted.
    expect(secret.stringData?.['gateway-password']).toBe('p4ss');
    expect(pod?.volumes?.[0]?.secret?.items?.map((i) => i.key)).toEqual(['redis.conf', 'users.acl']);
    // The selector picks this database's pod only.
    expect(spec?.selector.matchLabels).toEqual({ 'app.kubernetes.io/name': 'redis', 'app.kubernetes.io/instance': '1cache' });
  });

  it('drops runAsNonRoot and fsGroup when told to run as root (hostPath volumes ignore fsGroup)', () => {
    const [, , , set] = managedRedisObjects(input, { ...settings, runAsUser: 0 });
    expect(set.spec?.template.spec?.securityContext).toEqual({ runAsUser: 0, runAsGroup: 0, runAsNonRoot: false });
  });

  it('has no user line in redis.conf (users come only from the ACL file) and no password there', () => {
    expect(managedRedisConfig('256Mi')).not.toMatch(/^user /m);
    expect(managedRedisAcl('x')).toMatch(/^user default off$/m);
  });

  it('derives maxmemory from any memory quantity of the container', () => {
    expect(managedRedisConfig('1Gi')).toMatch(/^maxmemory 805306368$/m);
    expect(managedRedisConfig('1G')).toMatch(/^maxmemory 750000000$/m);
  });

  it('gives a restored database an init container that puts the snapshot in the volume first, as the server does', () => {
    const [, , , set] = managedRedisObjects({ ...input, restore: true }, { ...settings, initImage: 'localhost/restash/operator:0.1.0' });
    const pod = set.spec?.template.spec;
    expect(pod?.initContainers).toEqual([
      {
        name: 'restore',
        image: 'localhost/restash/operator:0.1.0',
        imagePullPolicy: 'Never',
        args: ['restore'],
        env: [{ name: 'RESTORE_DIR', value: '/data' }],
        envFrom: [{ secretRef: { name: 'redis-1cache-restore', optional: true } }],
        resources: pod?.containers[0]?.resources,
        securityContext: pod?.containers[0]?.securityContext,
        volumeMounts: [{ name: 'data', mountPath: '/data' }],
      },
    ]);
    expect(managedRedisObjects(input, { ...settings, initImage: 'x' })[3].spec?.template.spec?.initContainers).toBeUndefined();
    expect(() => managedRedisObjects({ ...input, restore: true }, settings)).toThrow(TypeError);
  });

  it('runs replicas as servers configured from the sentinels, spread over nodes, at most one down at a time, beside three sentinels', () => {
    const replicated = { ...input, replicas: 3, sentinelPassword: 'sp' };
    const tools = { ...settings, initImage: 'localhost/restash/operator:0.1.0' };
    const [secret, , , set, budget] = managedRedisObjects(replicated, tools);
    expect(secret.stringData?.['sentinel-password']).toBe('sp');
    expect(set.spec?.replicas).toBe(3);
    const pod = set.spec?.template.spec;
    expect(pod?.initContainers?.map((c) => [c.name, c.args])).toEqual([['configure', ['redis-config', 'server']]]);
    expect(pod?.containers[0]?.args).toEqual(['/config/redis.conf']);
    expect(pod?.affinity?.podAntiAffinity?.preferredDuringSchedulingIgnoredDuringExecution?.[0]?.podAffinityTerm.topologyKey).toBe('kubernetes.io/hostname');
    expect(budget).toMatchObject({ kind: 'PodDisruptionBudget', metadata: { name: 'redis-1cache' }, spec: { maxUnavailable: 1, selector: { matchLabels: set.spec?.selector.matchLabels } } });
    // The configuration reads both passwords from the config Secret, never from the pod spec.
    expect(pod?.initContainers?.[0]?.env?.filter((e) => e.name.endsWith('PASSWORD')).map((e) => e.valueFrom?.secretKeyRef)).toEqual([
      { name: 'redis-1cache', key: 'gateway-password' },
      { name: 'redis-1cache', key: 'sentinel-password' },
    ]);

    const [headless, service, sentinels, sentinelBudget] = managedSentinelObjects(replicated, tools);
    expect([headless.metadata?.name, service.metadata?.name, sentinels.metadata?.name, sentinelBudget.metadata?.name]).toEqual(['sentinel-1cache-headless', 'sentinel-1cache', 'sentinel-1cache', 'sentinel-1cache']);
    expect(sentinels.spec?.replicas).toBe(3);
    expect(sentinels.spec?.template.spec?.containers[0]?.args).toEqual(['/config/sentinel.conf', '--sentinel']);
    expect(sentinels.spec?.template.spec?.initContainers?.[0]?.args).toEqual(['redis-config', 'sentinel']);
    expect(() => managedRedisObjects({ ...input, replicas: 2 }, tools)).toThrow(TypeError);
    expect(() => managedSentinelObjects(replicated, settings)).toThrow(TypeError);
  });
});
