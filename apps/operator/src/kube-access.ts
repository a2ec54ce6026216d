import { type KubernetesObject, PatchStrategy, type V1Secret, type V1Service, type V1StatefulSet, type V1StorageClass } from '@kubernetes/client-node';
import { type EventRecorder, type KubernetesClient, isNotFound, kubernetesErrorMessage } from '@restash/operator/data-access-kubernetes';
import { type KubeAccess, managedRedisNames } from '@restash/platform/feature-reconcile';
import { GROUP, KINDS, KV_BACKUP_KIND, type KvBackup, type KvDatabase, type RestashResource, VERSION } from '@restash/shared/util-resources';
import { type EventLogger, logEvent } from '@restash/shared/util-http';

/**
 * The reconciler's view of Kubernetes (feature-reconcile's KubeAccess) on @kubernetes/client-node: resources from the
 * informers' caches, reads of Secrets, Services, StatefulSets and KvBackups straight from the API server (always current, and
 * few per pass), writes through server-side apply, the status subresource and conditional finalizer patches.
 *
 * Events are best effort: a refused one is logged (`kubernetes.event-failed` on `log`, with the tenant: its namespace),
 * never fails a pass.
 *
 * @param cached every restash resource of a namespace, from the informers
 */
export function kubeAccess(
  client: KubernetesClient,
  events: EventRecorder,
  cached: (namespace: string) => RestashResource[],
  log: EventLogger,
): KubeAccess {
  const orUndefined = async <T>(read: Promise<T>): Promise<T | undefined> => {
    try {
      return await read;
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  };
  return {
    resources: cached,
    getSecret: (namespace, name) => orUndefined<V1Secret>(client.core.readNamespacedSecret({ namespace, name })),
    getService: (namespace, name) => orUndefined<V1Service>(client.core.readNamespacedService({ namespace, name })),
    getPersistentVolumeClaim: (namespace, name) => orUndefined(client.core.readNamespacedPersistentVolumeClaim({ namespace, name })),
    async storageClassExpands(name) {
      const storageClass = await orUndefined(client.objects.read({ apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name } }) as Promise<V1StorageClass>);
      return storageClass === undefined ? undefined : storageClass.allowVolumeExpansion === true;
    },
    async resizePersistentVolumeClaim(namespace, name, storage) {
      await client.objects.patchJson(
        { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { namespace, name } },
        { spec: { resources: { requests: { storage } } } },
        PatchStrategy.MergePatch,
        { fieldManager: client.fieldManager },
      );
    },
    getKvBackup: (namespace, name) =>
      orUndefined(client.customObjects.getNamespacedCustomObject({ group: GROUP, version: VERSION, plural: KV_BACKUP_KIND.plural, namespace, name }) as Promise<KvBackup>),
    getStatefulSet: (namespace, name) =>
      orUndefined<V1StatefulSet>(client.objects.read({ apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { namespace, name } }) as Promise<V1StatefulSet>),
    async apply(object: KubernetesObject) {
      await client.serverSideApply(withEncodedData(object));
    },
    async remove(apiVersion, kind, namespace, name) {
      await orUndefined(client.objects.delete({ apiVersion, kind, metadata: { namespace, name } }, undefined, undefined, undefined, undefined, 'Background'));
    },
    async patchStatus(resource, status) {
      await client.patchStatus({ group: GROUP, version: VERSION, plural: KINDS[resource.kind].plural }, resource.metadata.namespace, resource.metadata.name, status);
    },
    async setFinalizers(resource, finalizers) {
      await client.patchFinalizers(resource as KubernetesObject, finalizers);
    },
    async event(resource, type, reason, message) {
      await events.record(resource as KubernetesObject, type, reason, message).catch((error: unknown) =>
        logEvent(log, 'warn', 'kubernetes.event-failed', {
          engine: 'kubernetes',
          tenant: resource.metadata.namespace,
          kind: resource.kind,
          name: resource.metadata.name,
          reason,
          error: kubernetesErrorMessage(error),
        }),
      );
    },
  };
}

/**
 * A Secret's `stringData` moved into `data` (base64), other objects unchanged: the API server folds
 * `stringData` into `data` on write, so a server-side apply that sets `stringData` would own fields it never
 * sees again and re-apply them on every call.
 */
export function withEncodedData(object: KubernetesObject): KubernetesObject {
  const secret = object as V1Secret;
  if (object.kind !== 'Secret' || !secret.stringData) return object;
  const { stringData, ...rest } = secret;
  const encoded = Object.fromEntries(Object.entries(stringData).map(([k, v]) => [k, Buffer.from(v, 'utf8').toString('base64')]));
  return { ...rest, data: { ...secret.data, ...encoded } } as KubernetesObject;
}

/**
 * Whether the KV database of a registry record is a managed one whose servers are going with their volumes: its
 * KvDatabase (namespace = the record's tenant) has `spec.redis.managed` and its StatefulSet `redis-<name>` is gone or
 * being deleted (feature-teardown's volumeBackedPurgers: a namespace being deleted). False for an external database,
 * and when the KvDatabase cannot be read.
 */
export function managedVolumesGo(client: KubernetesClient): (record: { tenant: string; name: string }) => Promise<boolean> {
  return async ({ tenant: namespace, name }) => {
    const plural = KINDS.KvDatabase.plural;
    // A list (the operator's RBAC has list and watch of its kinds, not get).
    const list = (await client.customObjects.listNamespacedCustomObject({ group: GROUP, version: VERSION, plural, namespace, fieldSelector: `metadata.name=${name}` }).catch(() => undefined)) as { items?: KvDatabase[] } | undefined;
    const database = list?.items?.[0];
    if (!database?.spec?.redis || database.spec.redis.external) return false;
    try {
      const set = (await client.objects.read({ apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { namespace, name: managedRedisNames(name).statefulSet } })) as V1StatefulSet;
      return set.metadata?.deletionTimestamp !== undefined;
    } catch (error) {
      return isNotFound(error);
    }
  };
}
