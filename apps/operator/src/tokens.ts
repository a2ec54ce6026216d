/** Injection token of the reconciler's TenantRegistry (feature-reconcile's tenantRegistry on the control Redis). */
export const TENANT_REGISTRY = Symbol('TENANT_REGISTRY');
/** Injection token of the reconciler's EngineAdmin (Qdrant collections, Kafka topics). */
export const ENGINE_ADMIN = Symbol('ENGINE_ADMIN');
/** Injection token of the backup controller's BackupEngines (backup-engines.ts). */
export const BACKUP_ENGINES = Symbol('BACKUP_ENGINES');
/** Injection token of the operator's KubernetesClient (one per process: the controller's and the teardown's). */
export const KUBERNETES_CLIENT = Symbol('KUBERNETES_CLIENT');
