import {
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  HttpMethod,
  KubeConfig,
  KubernetesObject,
  KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';

/** The field manager the operator writes with (server-side apply, status and finalizer patches). */
export const OPERATOR_FIELD_MANAGER = 'restash-operator';

/** Where a custom resource kind is served: `/apis/<group>/<version>/namespaces/<ns>/<plural>`. */
export interface KindInfo {
  group: string;
  version: string;
  plural: string;
}

/**
 * The generic client, plus a PATCH that sends and returns plain JSON. client-node's own `patch`
 * passes built-in kinds through its typed models, which read TypeScript property names: a plain
 * object's `x-kubernetes-*` or `default` fields (JSON names that differ) and fields newer than the
 * models would be dropped silently.
 */
export class RawObjectApi extends KubernetesObjectApi {
  static fromConfig(config: KubeConfig): RawObjectApi {
    const api = config.makeApiClient(RawObjectApi);
    api.setDefaultNamespace(config);
    return api;
  }

  /**
   * `PATCH` of the object `target` names (apiVersion, kind, metadata.name/namespace; the resource
   * is found through discovery, cached) with `body` sent as JSON under `contentType`.
   *
   * @returns the stored object as plain JSON
   * @throws ApiException on a non-2xx answer; Error for a kind the API server does not serve
   */
  async patchJson<T extends KubernetesObject>(target: KubernetesObject, body: unknown, contentType: PatchStrategy, query: Record<string, string> = {}): Promise<T> {
    const { apiVersion, kind } = target;
    const path = await this.specUriPath({ apiVersion, kind, metadata: { name: target.metadata?.name, namespace: target.metadata?.namespace } }, 'patch');
    const request = this.configuration.baseServer.makeRequestContext(path, HttpMethod.PATCH);
    request.setHeaderParam('Accept', 'application/json');
    request.setHeaderParam('Content-Type', contentType);
    for (const [name, value] of Object.entries(query)) request.setQueryParam(name, value);
    request.setBody(JSON.stringify(body));
    return this.requestPromise<T>(request, 'any');
  }
}

/**
 * The API calls the operator makes, on one KubeConfig: server-side apply of what it owns, status
 * and finalizer patches of the resources it reconciles. The generated clients are exposed for the
 * plain reads, lists and deletes (`objects` is the generic, kind-agnostic client).
 */
export class KubernetesClient {
  readonly objects: RawObjectApi;
  readonly core: CoreV1Api;
  readonly customObjects: CustomObjectsApi;
  readonly coordination: CoordinationV1Api;

  constructor(
    readonly config: KubeConfig,
    readonly fieldManager: string = OPERATOR_FIELD_MANAGER,
  ) {
    this.objects = RawObjectApi.fromConfig(config);
    this.core = config.makeApiClient(CoreV1Api);
    this.customObjects = config.makeApiClient(CustomObjectsApi);
    this.coordination = config.makeApiClient(CoordinationV1Api);
  }

  /**
   * Server-side apply (`PATCH` with `application/apply-patch+yaml`, `force=true`): `desired` holds
   * exactly the fields this manager owns (`apiVersion`, `kind`, `metadata.name`/`namespace` and the
   * fields it sets); fields it set before and leaves out are removed, fields other managers own are
   * kept, conflicts are taken over (force). Creates the object when it does not exist. Applying the
   * same `desired` twice changes nothing (same resourceVersion). `metadata.resourceVersion` and
   * `metadata.managedFields` are dropped from the request (an apply is not a conditional update).
   * `desired` is sent as written (plain JSON names, see {@link RawObjectApi}).
   *
   * @returns the object as stored, as plain JSON
   * @throws ApiException (e.g. 422 for an invalid object, 404 for an unknown namespace)
   */
  async serverSideApply<T extends KubernetesObject>(desired: T, fieldManager: string = this.fieldManager): Promise<T> {
    const { resourceVersion: _rv, managedFields: _mf, ...metadata } = desired.metadata ?? {};
    return this.objects.patchJson<T>(desired, { ...desired, metadata }, PatchStrategy.ServerSideApply, { fieldManager, force: 'true' });
  }

  /**
   * Merge-patches `status` onto the `/status` subresource of a namespaced custom resource (the only
   * way to write status when the CRD enables the subresource; spec changes sent there are ignored by
   * the API server). Lists inside `status` (conditions) are replaced whole.
   *
   * @returns the object as stored, as plain JSON
   * @throws ApiException (404 when the object is gone)
   */
  async patchStatus<T extends KubernetesObject = KubernetesObject>(kind: KindInfo, namespace: string, name: string, status: object): Promise<T> {
    return this.customObjects.patchNamespacedCustomObjectStatus(
      { group: kind.group, version: kind.version, plural: kind.plural, namespace, name, body: { status }, fieldManager: this.fieldManager },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    ) as Promise<T>;
  }

  /**
   * Sets `metadata.finalizers` of `object` (any kind) to `finalizers`, conditionally: a merge patch
   * carrying the `metadata.resourceVersion` of `object`, so the write fails with 409 when the object
   * changed since it was read (another writer's finalizer is never lost; re-read and retry).
   *
   * @returns the object as stored, as plain JSON
   * @throws ApiException 409 when `object` is stale, 404 when it is gone
   */
  async patchFinalizers<T extends KubernetesObject>(object: T, finalizers: readonly string[]): Promise<T> {
    const { name, resourceVersion } = object.metadata ?? {};
    if (!name || !resourceVersion) throw new TypeError('patchFinalizers needs an object read from the API server (metadata.name and resourceVersion)');
    return this.objects.patchJson<T>(object, { metadata: { resourceVersion, finalizers: [...finalizers] } }, PatchStrategy.MergePatch, { fieldManager: this.fieldManager });
  }

  /** Adds `finalizer` to `object` unless present (then `object` is returned without a request); see {@link patchFinalizers}. */
  async addFinalizer<T extends KubernetesObject>(object: T, finalizer: string): Promise<T> {
    const current = object.metadata?.finalizers ?? [];
    if (current.includes(finalizer)) return object;
    return this.patchFinalizers(object, [...current, finalizer]);
  }

  /** Removes `finalizer` from `object` if present (else returns `object` without a request); see {@link patchFinalizers}. */
  async removeFinalizer<T extends KubernetesObject>(object: T, finalizer: string): Promise<T> {
    const current = object.metadata?.finalizers ?? [];
    if (!current.includes(finalizer)) return object;
    return this.patchFinalizers(
      object,
      current.filter((f) => f !== finalizer),
    );
  }
}
