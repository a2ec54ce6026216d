// The managed Redis servers of KvDatabases, as the tenant reconciler keeps them (split from tenant-reconciler.ts):
// applied with their sentinels and restore Secret, their volumes grown, and deleted with the database.
import { randomBytes } from 'node:crypto';
// Not re-exported by the package's index; the Kubernetes quantity grammar is the library's to parse.
import { quantityToScalar } from '@kubernetes/client-node/dist/util.js';
import { type ConditionReason, MAX_MANAGED_REPLICAS, type RestashResource } from '@restash/shared/util-resources';
import { GATEWAY_REDIS_USER } from '@restash/kv/util-command';
import { GATEWAY_PASSWORD_KEY, MANAGED_REDIS_PORT, SENTINEL_PASSWORD_KEY, managedRedisNames, managedRedisObjects } from './managed-redis';
import { SENTINEL_PORT, SENTINEL_QUORUM, managedSentinelObjects, sentinelNames } from './managed-sentinel';
import { restoreSourceOf } from './restore-source';
import { secretText } from './sdk-secret';
import type { KubeAccess, TenantReconcilerOptions } from './tenant-ports';

/** The managed Redis of a tenant's KvDatabases: step 3 (ensureManagedRedis) and step 7 (removeManagedRedis) of a TenantReconciler pass. */
export class ManagedRedisServers {
  constructor(
    private readonly kube: KubeAccess,
    private readonly options: Pick<TenantReconcilerOptions, 'managedRedis'>,
  ) {}

  /**
   * Applies a managed KvDatabase's Redis objects (managed-redis.ts; with replicas, its sentinels: managed-sentinel.ts)
   * and reads back its address: the server's ClusterIP, or the sentinels' for a replicated one. A database with
   * `spec.restore` gets its restore Secret first (restoreSourceOf), once, before its StatefulSet exists: nothing of it
   * is made while the source is refused or still being taken, so that it never starts empty.
   * @returns the gateway's URL of it (once the Service has a cluster IP) and whether the server is ready, or why it is refused
   */
  async ensureManagedRedis(
    db: RestashResource & { kind: 'KvDatabase' },
  ): Promise<{ url?: string; ready: boolean; message: string; refused?: { reason: ConditionReason; message: string } }> {
    const { name, namespace, uid } = db.metadata;
    const names = managedRedisNames(name);
    const managed = db.spec.redis.managed ?? { storage: '1Gi', replicas: 1, engine: 'redis' as const };
    const replicated = managed.replicas > 1;
    if ((db.spec.restore || replicated) && !this.options.managedRedis.initImage) {
      return { ready: false, message: '', refused: { reason: 'NotSupported', message: "restores and replicas need the operator's MANAGED_REDIS_INIT_IMAGE" } };
    }
    const { valkeyImage } = this.options.managedRedis;
    if (managed.engine === 'valkey' && !valkeyImage) {
      return { ready: false, message: '', refused: { reason: 'NotSupported', message: "engine valkey needs the operator's MANAGED_VALKEY_IMAGE" } };
    }
    const settings = managed.engine === 'valkey' && valkeyImage ? { ...this.options.managedRedis, image: valkeyImage } : this.options.managedRedis;
    const existing = await this.kube.getStatefulSet(namespace, names.statefulSet);
    if (db.spec.restore && !existing && !(await this.kube.getSecret(namespace, names.restore))) {
      const source = await restoreSourceOf(db, this.kube);
      if ('refused' in source) return { ready: false, message: '', refused: { reason: 'InvalidSpec', message: `spec.restore: ${source.refused}` } };
      if ('waiting' in source) return { ready: false, message: source.waiting };
      await this.kube.apply(source.secret);
    }
    const config = secretText(await this.kube.getSecret(namespace, names.secret));
    const password = config[GATEWAY_PASSWORD_KEY] || randomBytes(24).toString('hex');
    const sentinelPassword = replicated ? config[SENTINEL_PASSWORD_KEY] || randomBytes(24).toString('hex') : undefined;
    const owner = { apiVersion: db.apiVersion, kind: db.kind, name, namespace, uid: uid ?? '' };
    // A StatefulSet's volume template never changes: a larger `storage` grows the claims instead (growVolumes).
    const template = existing?.spec?.volumeClaimTemplates?.[0]?.spec;
    const storage = template?.resources?.requests?.['storage'] ?? managed.storage;
    const storageClassName = existing ? template?.storageClassName : managed.storageClassName;
    const objects = [
      ...managedRedisObjects(
        {
          owner,
          storage,
          ...(storageClassName ? { storageClassName } : {}),
          password,
          replicas: managed.replicas,
          ...(sentinelPassword ? { sentinelPassword } : {}),
          ...(db.spec.restore ? { restore: true } : {}),
        },
        settings,
      ),
      ...(replicated ? managedSentinelObjects({ owner }, settings) : []),
    ];
    for (const object of objects) await this.kube.apply(object);
    const notGrown = existing ? await this.growVolumes(db, managed.replicas, managed.storage) : undefined;
    if (notGrown) await this.kube.event(db, 'Warning', 'StorageNotExpanded', notGrown);
    const set = await this.kube.getStatefulSet(namespace, names.statefulSet);
    const serving = (set?.status?.readyReplicas ?? 0) >= 1;
    if (!replicated) {
      const ip = (await this.kube.getService(namespace, names.service))?.spec?.clusterIP;
      const url = ip && ip !== 'None' ? `redis://${GATEWAY_REDIS_USER}:${password}@${ip}:${MANAGED_REDIS_PORT}/0` : undefined;
      const ready = serving && url !== undefined;
      return { ...(url ? { url } : {}), ready, message: ready ? '' : `waiting for the Redis server (StatefulSet ${names.statefulSet}) to be ready` };
    }
    // The gateways ask the sentinels (their ClusterIP Service) for the primary: a failover needs no registry change.
    const sentinels = sentinelNames(name);
    const ip = (await this.kube.getService(namespace, sentinels.service))?.spec?.clusterIP;
    const url = ip && ip !== 'None' ? `redis+sentinel://${GATEWAY_REDIS_USER}:${password}@${ip}:${SENTINEL_PORT}/${name}/0?sentinelPassword=${sentinelPassword}` : undefined;
    const voters = (await this.kube.getStatefulSet(namespace, sentinels.statefulSet))?.status?.readyReplicas ?? 0;
    const ready = serving && voters >= SENTINEL_QUORUM && url !== undefined;
    return { ...(url ? { url } : {}), ready, message: ready ? '' : `waiting for the Redis servers (StatefulSet ${names.statefulSet}) and their sentinels (StatefulSet ${sentinels.statefulSet}) to be ready` };
  }

  /**
   * Grows the volumes of a managed database whose `storage` grew (docs/operations.md, "KV databases: replicas and failover"): each
   * server's claim smaller than `storage` is asked for `storage` when its StorageClass allows expansion.
   * @returns why a volume cannot grow (its StorageClass does not allow expansion: a Warning Event says so, and the
   *   database is served at its old size), or undefined
   */
  private async growVolumes(db: RestashResource & { kind: 'KvDatabase' }, replicas: number, storage: string): Promise<string | undefined> {
    const { namespace } = db.metadata;
    const wanted = Number(quantityToScalar(storage));
    for (let i = 0; i < replicas; i++) {
      const name = managedRedisNames(db.metadata.name).pvc.replace(/-0$/, `-${i}`);
      const claim = await this.kube.getPersistentVolumeClaim(namespace, name);
      const requested = claim?.spec?.resources?.requests?.['storage'];
      if (!claim || requested === undefined || Number(quantityToScalar(requested)) >= wanted) continue;
      const className = claim.spec?.storageClassName ?? '';
      if ((await this.kube.storageClassExpands(className)) !== true) {
        return `spec.redis.managed.storage: volume ${name} stays ${requested}: StorageClass '${className}' does not allow volume expansion (allowVolumeExpansion); the database is served at its old size`;
      }
      await this.kube.resizePersistentVolumeClaim(namespace, name, storage);
    }
    return undefined;
  }

  /** Deletes a KvDatabase's managed Redis: the StatefulSets (servers, sentinels), the PVCs (its data), the budgets, the Services and the Secrets. */
  async removeManagedRedis(db: RestashResource): Promise<void> {
    const names = managedRedisNames(db.metadata.name);
    const ns = db.metadata.namespace;
    const sentinels = sentinelNames(db.metadata.name);
    await this.kube.remove('apps/v1', 'StatefulSet', ns, sentinels.statefulSet);
    await this.kube.remove('apps/v1', 'StatefulSet', ns, names.statefulSet);
    for (let i = 0; i < MAX_MANAGED_REPLICAS; i++) await this.kube.remove('v1', 'PersistentVolumeClaim', ns, names.pvc.replace(/-0$/, `-${i}`));
    await this.kube.remove('policy/v1', 'PodDisruptionBudget', ns, names.statefulSet);
    await this.kube.remove('policy/v1', 'PodDisruptionBudget', ns, sentinels.statefulSet);
    await this.kube.remove('v1', 'Service', ns, sentinels.service);
    await this.kube.remove('v1', 'Service', ns, sentinels.headless);
    await this.kube.remove('v1', 'Service', ns, names.service);
    await this.kube.remove('v1', 'Service', ns, names.headless);
    await this.kube.remove('v1', 'Secret', ns, names.secret);
    await this.kube.remove('v1', 'Secret', ns, names.restore);
  }
}
