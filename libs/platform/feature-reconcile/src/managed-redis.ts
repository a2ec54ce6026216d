import type { V1Affinity, V1EnvVar, V1PodDisruptionBudget, V1Secret, V1Service, V1StatefulSet } from '@kubernetes/client-node';
// Not re-exported by the package's index; the Kubernetes quantity grammar is the library's to parse.
import { quantityToScalar } from '@kubernetes/client-node/dist/util.js';
import { gatewayUserRule, kvServerMemoryConfig } from '@restash/kv/util-command';

/** Where a managed Redis listens, in its pod and behind its Services. */
export const MANAGED_REDIS_PORT = 6379;

/** How the operator runs the managed Redis of a KV database (operator configuration, `MANAGED_REDIS_*`). */
export interface ManagedRedisSettings {
  /** The image: a redis-server as the local stack runs it (deploy/k8s/images.sh builds `localhost/restash/redis:<version>`). */
  image: string;
  /**
   * The image of databases whose `spec.redis.managed.engine` is `valkey`: a valkey-server (deploy/k8s/images.sh builds
   * `localhost/restash/valkey:<version>`), run as the Redis image is, servers and sentinels; without it such databases are refused.
   */
  valkeyImage?: string;
  imagePullPolicy: 'Always' | 'IfNotPresent' | 'Never';
  /** The user and group the server runs as; the data volume is group-owned by it (fsGroup). 0 only where the storage ignores fsGroup (hostPath). */
  runAsUser: number;
  /** Kubernetes quantities of the server container: requests and memory limit. */
  cpuRequest: string;
  memoryRequest: string;
  memoryLimit: string;
  /**
   * The image of the init containers: the operator's own, whose `restore` command puts a snapshot in place
   * (apps/operator/src/restore-command.ts) and whose `redis-config` command writes a replicated database's server and
   * sentinel configuration (redis-config-command.ts); without it restores and replicas are refused.
   */
  initImage?: string;
}

/** What one KV database's managed Redis is: its name, its volume and the gateway user's password. */
export interface ManagedRedisInput {
  /** The KvDatabase (metadata.name, namespace, uid for the ownerReference). */
  owner: { apiVersion: string; kind: string; name: string; namespace: string; uid: string };
  /** The PVC size (a quantity, e.g. `1Gi`) and storage class (the cluster's default when absent). */
  storage: string;
  storageClassName?: string;
  /** The password of {@link GATEWAY_REDIS_USER}: kept in the config Secret and reused while it exists. */
  password: string;
  /** Whether the database starts from a snapshot: its pods get the restore init container (settings.initImage). */
  restore?: boolean;
  /** Servers: 1 (one Redis, no Sentinel), or 2 to 5: a primary, replicas and the sentinels of managedSentinelObjects. */
  replicas?: number;
  /** The sentinels' own password, kept in the config Secret ({@link SENTINEL_PASSWORD_KEY}); required with replicas. */
  sentinelPassword?: string;
}

/**
 * The names of a managed Redis' objects: `redis-<database>` for the StatefulSet, the config Secret and the
 * ClusterIP Service, `redis-<database>-headless` for the StatefulSet's governing Service, `redis-<database>-restore` for
 * the Secret a restore reads (restore-source.ts). The `redis-` prefix
 * makes them DNS-1035 labels (a Service name must start with a letter; a database name may not); the CRD
 * limits KvDatabase names to 45 characters so that the StatefulSet's pods' revision label fits in 63.
 */
export function managedRedisNames(database: string): { statefulSet: string; service: string; headless: string; secret: string; restore: string; pvc: string } {
  const base = `redis-${database}`;
  return { statefulSet: base, service: base, headless: `${base}-headless`, secret: base, restore: `${base}-restore`, pvc: `data-${base}-0` };
}

/** The labels of every object of a managed Redis, and the StatefulSet's pod selector (name and instance). */
export function managedRedisLabels(database: string): Record<string, string> {
  return {
    'app.kubernetes.io/name': 'redis',
    'app.kubernetes.io/instance': database,
    'app.kubernetes.io/component': 'kv-database',
    'app.kubernetes.io/part-of': 'restash',
    'app.kubernetes.io/managed-by': 'restash-operator',
  };
}

/**
 * The redis.conf of a managed Redis: AOF every second (docs/operations.md, "KV databases: durability"), no RDB snapshots, never
 * evict (Upstash's default), users from the mounted ACL file only, and `maxmemory` and the normal clients'
 * output-buffer limit as parts of the container's memory limit (kvServerMemoryConfig, docs/kv.md, "KV: limits"), so that
 * Redis refuses writes and cuts an oversized reply before the kernel kills the container.
 * @param memoryLimit the container's memory limit, a Kubernetes quantity (`256Mi`)
 */
export function managedRedisConfig(memoryLimit: string): string {
  return [
    `port ${MANAGED_REDIS_PORT}`,
    'bind * -::*',
    'protected-mode no',
    'dir /data',
    'appendonly yes',
    'appendfsync everysec',
    'save ""',
    ...kvServerMemoryConfig(Number(quantityToScalar(memoryLimit))),
    'aclfile /etc/redis/users.acl',
    '',
  ].join('\n');
}

/** The ACL file of a managed Redis: the default user off, the gateway's user on (gatewayUserRule), as the local stack's servers have it. */
export function managedRedisAcl(password: string): string {
  return `user default off\n${gatewayUserRule(password)}\n`;
}

/** The config Secret's key that keeps the gateway user's password (not mounted into the pod). */
export const GATEWAY_PASSWORD_KEY = 'gateway-password';

/** The config Secret's key of a replicated database's sentinels' password (`requirepass`; the gateways send it as `sentinelPassword`). */
export const SENTINEL_PASSWORD_KEY = 'sentinel-password';

/** The environment of a replicated database's `redis-config` init containers (apps/operator/src/redis-config-command.ts). */
export function replicatedEnv(database: string, secret: string): V1EnvVar[] {
  return [
    { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
    { name: 'POD_NAMESPACE', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
    { name: 'DATABASE', value: database },
    { name: 'GATEWAY_PASSWORD', valueFrom: { secretKeyRef: { name: secret, key: GATEWAY_PASSWORD_KEY } } },
    { name: 'SENTINEL_PASSWORD', valueFrom: { secretKeyRef: { name: secret, key: SENTINEL_PASSWORD_KEY } } },
  ];
}

/** Pods of one set on different nodes where the cluster has them (preferred: a single-node cluster still runs them all). */
export function spreadOver(selector: Record<string, string>): V1Affinity {
  return { podAntiAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 100, podAffinityTerm: { topologyKey: 'kubernetes.io/hostname', labelSelector: { matchLabels: selector } } }] } };
}

/**
 * The objects of a KV database's managed Redis (docs/kubernetes.md, "Operator"; issue 13 "What backs each resource"), each
 * owned by the KvDatabase (so Kubernetes' garbage collector removes them with it): the config Secret (redis.conf
 * and the ACL file, mounted read-only), the headless Service the StatefulSet needs, a ClusterIP Service the
 * gateways connect to (a stable address that works without cluster DNS, also from outside the pod network), and a
 * StatefulSet of one Redis with a PVC per pod that is deleted with the StatefulSet. A database restored from a snapshot
 * has a `restore` init container (settings.initImage) that reads Secret `redis-<database>-restore`. With `replicas` of
 * 2 to 5 the StatefulSet runs that many servers, each configured by a `configure` init container (its role from the
 * sentinels), spread over nodes, with a PodDisruptionBudget of one (the sentinels: managedSentinelObjects), and
 * `updateStrategy: OnDelete`: a changed template (a new image) is rolled by the operator, replicas first, then a
 * failover, then the old primary (rolling-upgrade.ts), never by the StatefulSet controller, which would restart the
 * primary without a failover.
 *
 * @returns objects ready for server-side apply, in the order to apply them
 * @throws TypeError for a restore or replicas without settings.initImage, or replicas without a sentinel password
 */
export function managedRedisObjects(input: ManagedRedisInput, settings: ManagedRedisSettings): [V1Secret, V1Service, V1Service, V1StatefulSet, ...V1PodDisruptionBudget[]] {
  const { owner } = input;
  const names = managedRedisNames(owner.name);
  const labels = managedRedisLabels(owner.name);
  const selector = { 'app.kubernetes.io/name': 'redis', 'app.kubernetes.io/instance': owner.name };
  const metadata = ownedMetadata(owner, labels);
  const port = { name: 'redis', port: MANAGED_REDIS_PORT, targetPort: 'redis', protocol: 'TCP' };
  const root = settings.runAsUser === 0;
  const resources = { requests: { cpu: settings.cpuRequest, memory: settings.memoryRequest }, limits: { memory: settings.memoryLimit } };
  const containerSecurity = { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } };
  const replicas = input.replicas ?? 1;
  const replicated = replicas > 1;
  if ((input.restore || replicated) && !settings.initImage) throw new TypeError('restores and replicas need settings.initImage (MANAGED_REDIS_INIT_IMAGE)');
  if (replicated && !input.sentinelPassword) throw new TypeError('replicas need a sentinel password');
  // Puts the snapshot in the empty volume as the AOF's base before the first start; a no-op on a volume with data.
  const restore = input.restore
    ? [
        {
          name: 'restore',
          image: settings.initImage,
          imagePullPolicy: settings.imagePullPolicy,
          args: ['restore'],
          env: [{ name: 'RESTORE_DIR', value: '/data' }],
          envFrom: [{ secretRef: { name: names.restore, optional: true } }],
          resources,
          securityContext: containerSecurity,
          volumeMounts: [{ name: 'data', mountPath: '/data' }],
        },
      ]
    : [];
  // A replicated server's configuration: its role from the sentinels (redis-config-command.ts), into an emptyDir.
  const configure = replicated
    ? [
        {
          name: 'configure',
          image: settings.initImage,
          imagePullPolicy: settings.imagePullPolicy,
          args: ['redis-config', 'server'],
          env: replicatedEnv(owner.name, names.secret),
          resources,
          securityContext: containerSecurity,
          volumeMounts: [
            { name: 'data', mountPath: '/data', readOnly: true },
            { name: 'config', mountPath: '/etc/redis', readOnly: true },
            { name: 'runtime', mountPath: '/config' },
          ],
        },
      ]
    : [];
  const initContainers = [...restore, ...configure];
  return [
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: metadata(names.secret),
      type: 'Opaque',
      stringData: {
        'redis.conf': managedRedisConfig(settings.memoryLimit),
        'users.acl': managedRedisAcl(input.password),
        [GATEWAY_PASSWORD_KEY]: input.password,
        ...(input.sentinelPassword ? { [SENTINEL_PASSWORD_KEY]: input.sentinelPassword } : {}),
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: metadata(names.headless),
      spec: { clusterIP: 'None', selector, ports: [port], publishNotReadyAddresses: true },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: metadata(names.service),
      spec: { type: 'ClusterIP', selector, ports: [port] },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: metadata(names.statefulSet),
      spec: {
        serviceName: names.headless,
        replicas,
        selector: { matchLabels: selector },
        persistentVolumeClaimRetentionPolicy: { whenDeleted: 'Delete', whenScaled: 'Retain' },
        // Replicated: the operator rolls the pods itself, replicas first, then a failover (ReplicationWatcher).
        updateStrategy: replicated ? { type: 'OnDelete' } : { type: 'RollingUpdate' },
        template: {
          metadata: { labels },
          spec: {
            automountServiceAccountToken: false,
            enableServiceLinks: false,
            securityContext: {
              runAsUser: settings.runAsUser,
              runAsGroup: settings.runAsUser,
              runAsNonRoot: !root,
              ...(root ? {} : { fsGroup: settings.runAsUser }),
            },
            ...(initContainers.length > 0 ? { initContainers } : {}),
            ...(replicated ? { affinity: spreadOver(selector) } : {}),
            containers: [
              {
                name: 'redis',
                image: settings.image,
                imagePullPolicy: settings.imagePullPolicy,
                args: [replicated ? '/config/redis.conf' : '/etc/redis/redis.conf'],
                ports: [{ name: 'redis', containerPort: MANAGED_REDIS_PORT, protocol: 'TCP' }],
                readinessProbe: { tcpSocket: { port: 'redis' }, periodSeconds: 2, failureThreshold: 3 },
                livenessProbe: { tcpSocket: { port: 'redis' }, initialDelaySeconds: 10, periodSeconds: 10 },
                resources,
                securityContext: containerSecurity,
                volumeMounts: [
                  { name: 'data', mountPath: '/data' },
                  { name: 'config', mountPath: '/etc/redis', readOnly: true },
                  ...(replicated ? [{ name: 'runtime', mountPath: '/config' }] : []),
                ],
              },
            ],
            volumes: [
              {
                name: 'config',
                secret: { secretName: names.secret, defaultMode: 0o440, items: [{ key: 'redis.conf', path: 'redis.conf' }, { key: 'users.acl', path: 'users.acl' }] },
              },
              ...(replicated ? [{ name: 'runtime', emptyDir: {} }] : []),
            ],
          },
        },
        volumeClaimTemplates: [
          {
            metadata: { name: 'data', labels },
            spec: {
              accessModes: ['ReadWriteOnce'],
              resources: { requests: { storage: input.storage } },
              ...(input.storageClassName ? { storageClassName: input.storageClassName } : {}),
            },
          },
        ],
      },
    },
    ...(replicated ? [disruptionBudget(metadata(names.statefulSet), selector)] : []),
  ];
}

/**
 * The metadata of an object the operator makes for a KvDatabase (docs/kubernetes.md): `name` in the owner's namespace,
 * with `labels`, and the owner as its controller, so that the object goes with it.
 */
export function ownedMetadata(owner: ManagedRedisInput['owner'], labels: Record<string, string>) {
  return (name: string) => ({
    name,
    namespace: owner.namespace,
    labels,
    ownerReferences: [{ apiVersion: owner.apiVersion, kind: owner.kind, name: owner.name, uid: owner.uid, controller: true, blockOwnerDeletion: true }],
  });
}

/** At most one pod of the set down by a voluntary disruption (a drain, an eviction) at a time. */
export function disruptionBudget(metadata: V1PodDisruptionBudget['metadata'], selector: Record<string, string>): V1PodDisruptionBudget {
  return { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata, spec: { maxUnavailable: 1, selector: { matchLabels: selector } } };
}
