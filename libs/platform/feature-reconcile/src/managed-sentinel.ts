import { createHash } from 'node:crypto';
import type { V1PodDisruptionBudget, V1Service, V1StatefulSet } from '@kubernetes/client-node';
import { GATEWAY_REDIS_USER } from '@restash/kv/util-command';
import { MANAGED_REDIS_PORT, type ManagedRedisInput, type ManagedRedisSettings, disruptionBudget, managedRedisNames, ownedMetadata, replicatedEnv, spreadOver } from './managed-redis';

/** Where a managed database's Redis Sentinels listen. */
export const SENTINEL_PORT = 26379;
/** Sentinels per replicated database: three, so that two agree on a failover while one is lost. */
export const SENTINEL_COUNT = 3;
/** Sentinels that must find the primary unreachable before a failover. */
export const SENTINEL_QUORUM = 2;
/** How long a primary may not answer before the sentinels fail over (ms). */
export const SENTINEL_DOWN_AFTER_MS = 3_000;
/**
 * Sentinel's failover-timeout for a managed database, in ms: a Sentinel whose failover attempt did not finish tries
 * again after twice this (a CI run saw a primary promoted 21.5 s after the kill at 10 s, against 6.5 s when the
 * first attempt succeeds), and waits at most this long for the replicas to follow the new primary.
 */
export const SENTINEL_FAILOVER_TIMEOUT_MS = 5_000;

/**
 * The names of a replicated database's Sentinel objects: StatefulSet, ClusterIP Service (the gateways ask it) and
 * headless Service `sentinel-<database>` / `sentinel-<database>-headless`, and the config Secret key of their
 * password. The CRD keeps such a database's name at 43 characters, so that the StatefulSet's pods' revision label
 * (`sentinel-<database>-<10 characters>`) fits in 63.
 */
export function sentinelNames(database: string): { statefulSet: string; service: string; headless: string } {
  const base = `sentinel-${database}`;
  return { statefulSet: base, service: base, headless: `${base}-headless` };
}

/** The DNS name of a StatefulSet's pod under its headless Service: how servers and sentinels announce themselves. */
export function podHost(pod: string, headless: string, namespace: string): string {
  return `${pod}.${headless}.${namespace}.svc.cluster.local`;
}

/** What a server of a replicated database starts as (serverRole). */
export type ServerRole = { role: 'primary' } | { role: 'replica'; of: string } | { role: 'wait'; reason: string };

/**
 * What a server of a replicated database starts as, from what the sentinels say (docs/operations.md, "KV databases: replicas and
 * failover"): the primary they name is followed; the server they name itself starts as the primary only with the data
 * it had (a volume without an append-only file lost it: it waits for the failover rather than start an empty primary
 * its replicas would copy); when no sentinel knows a primary yet (a new database), the first pod is the primary.
 * @param me this server's host (podHost)
 * @param first the first pod's host
 * @param named the primary's host the sentinels name; undefined when none answered or none knows one
 * @param hasData whether this server's volume has an append-only file
 */
export function serverRole(me: string, first: string, named: string | undefined, hasData: boolean): ServerRole {
  if (named === me) return hasData ? { role: 'primary' } : { role: 'wait', reason: 'the sentinels name this server the primary, but its volume has no data: waiting for the failover' };
  if (named !== undefined) return { role: 'replica', of: named };
  return me === first ? { role: 'primary' } : { role: 'replica', of: first };
}

/**
 * The redis.conf of one server of a replicated database: the database's base configuration (managedRedisConfig), its
 * announced name, the gateway user's credentials to replicate with (a replica authenticates to its primary as that
 * user), and `replicaof` for a replica.
 */
export function serverConfig(base: string, me: string, gatewayPassword: string, role: Exclude<ServerRole, { role: 'wait' }>): string {
  return [
    base.trimEnd(),
    `replica-announce-ip ${me}`,
    `masteruser ${GATEWAY_REDIS_USER}`,
    `masterauth ${gatewayPassword}`,
    ...(role.role === 'replica' ? [`replicaof ${role.of} ${MANAGED_REDIS_PORT}`] : []),
    '',
  ].join('\n');
}

/**
 * The sentinel.conf of one sentinel of a replicated database: it monitors the primary as `<database>` (quorum
 * {@link SENTINEL_QUORUM}, down after {@link SENTINEL_DOWN_AFTER_MS}), talks to the servers as the gateway user, asks
 * its own password of clients and other sentinels, announces its pod's DNS name, and keeps one id per pod (derived
 * from its name) so that a restarted sentinel is the same voter, never one more.
 */
export function sentinelConfig(input: { me: string; database: string; primary: string; gatewayPassword: string; sentinelPassword: string }): string {
  const { me, database, primary } = input;
  return [
    `port ${SENTINEL_PORT}`,
    'bind * -::*',
    'protected-mode no',
    'dir /tmp',
    `sentinel myid ${createHash('sha1').update(me).digest('hex')}`,
    'sentinel resolve-hostnames yes',
    'sentinel announce-hostnames yes',
    `sentinel announce-ip ${me}`,
    `requirepass ${input.sentinelPassword}`,
    `sentinel sentinel-pass ${input.sentinelPassword}`,
    `sentinel monitor ${database} ${primary} ${MANAGED_REDIS_PORT} ${SENTINEL_QUORUM}`,
    `sentinel auth-user ${database} ${GATEWAY_REDIS_USER}`,
    `sentinel auth-pass ${database} ${input.gatewayPassword}`,
    `sentinel down-after-milliseconds ${database} ${SENTINEL_DOWN_AFTER_MS}`,
    `sentinel failover-timeout ${database} ${SENTINEL_FAILOVER_TIMEOUT_MS}`,
    `sentinel parallel-syncs ${database} 1`,
    '',
  ].join('\n');
}

/**
 * The Redis Sentinels of a replicated managed database (replicas 2 to 5; docs/operations.md, "KV databases: replicas and
 * failover"), each owned by the KvDatabase: a headless Service (stable DNS names, ready or not), a ClusterIP Service
 * the gateways ask for the primary (`redis+sentinel://…`), a StatefulSet of {@link SENTINEL_COUNT} sentinels spread
 * over nodes (the Redis image with `--sentinel`; its configuration written by the `configure` init container into an
 * emptyDir Sentinel may rewrite), and a PodDisruptionBudget of one.
 * @returns objects ready for server-side apply, in the order to apply them
 * @throws TypeError without settings.initImage
 */
export function managedSentinelObjects(input: Pick<ManagedRedisInput, 'owner'>, settings: ManagedRedisSettings): [V1Service, V1Service, V1StatefulSet, V1PodDisruptionBudget] {
  if (!settings.initImage) throw new TypeError('replicas need settings.initImage (MANAGED_REDIS_INIT_IMAGE)');
  const { owner } = input;
  const names = sentinelNames(owner.name);
  const selector = { 'app.kubernetes.io/name': 'redis-sentinel', 'app.kubernetes.io/instance': owner.name };
  const labels = { ...selector, 'app.kubernetes.io/component': 'kv-database', 'app.kubernetes.io/part-of': 'restash', 'app.kubernetes.io/managed-by': 'restash-operator' };
  const metadata = ownedMetadata(owner, labels);
  const port = { name: 'sentinel', port: SENTINEL_PORT, targetPort: 'sentinel', protocol: 'TCP' };
  const root = settings.runAsUser === 0;
  const resources = { requests: { cpu: '10m', memory: '16Mi' }, limits: { memory: '64Mi' } };
  const securityContext = { allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } };
  return [
    { apiVersion: 'v1', kind: 'Service', metadata: metadata(names.headless), spec: { clusterIP: 'None', selector, ports: [port], publishNotReadyAddresses: true } },
    { apiVersion: 'v1', kind: 'Service', metadata: metadata(names.service), spec: { type: 'ClusterIP', selector, ports: [port] } },
    {
      apiVersion: 'apps/v1',
      kind: 'StatefulSet',
      metadata: metadata(names.statefulSet),
      spec: {
        serviceName: names.headless,
        replicas: SENTINEL_COUNT,
        podManagementPolicy: 'Parallel',
        selector: { matchLabels: selector },
        template: {
          metadata: { labels },
          spec: {
            automountServiceAccountToken: false,
            enableServiceLinks: false,
            securityContext: { runAsUser: settings.runAsUser, runAsGroup: settings.runAsUser, runAsNonRoot: !root },
            affinity: spreadOver(selector),
            initContainers: [
              {
                name: 'configure',
                image: settings.initImage,
                imagePullPolicy: settings.imagePullPolicy,
                args: ['redis-config', 'sentinel'],
                env: replicatedEnv(owner.name, managedRedisNames(owner.name).secret),
                resources: { requests: { cpu: '10m', memory: '64Mi' }, limits: { memory: '256Mi' } },
                securityContext,
                volumeMounts: [{ name: 'runtime', mountPath: '/config' }],
              },
            ],
            containers: [
              {
                name: 'sentinel',
                image: settings.image,
                imagePullPolicy: settings.imagePullPolicy,
                args: ['/config/sentinel.conf', '--sentinel'],
                ports: [{ name: 'sentinel', containerPort: SENTINEL_PORT, protocol: 'TCP' }],
                readinessProbe: { tcpSocket: { port: 'sentinel' }, periodSeconds: 2, failureThreshold: 3 },
                livenessProbe: { tcpSocket: { port: 'sentinel' }, initialDelaySeconds: 10, periodSeconds: 10 },
                resources,
                securityContext,
                volumeMounts: [
                  { name: 'runtime', mountPath: '/config' },
                  { name: 'tmp', mountPath: '/tmp' },
                ],
              },
            ],
            volumes: [
              { name: 'runtime', emptyDir: {} },
              { name: 'tmp', emptyDir: {} },
            ],
          },
        },
      },
    },
    disruptionBudget(metadata(names.statefulSet), selector),
  ];
}
