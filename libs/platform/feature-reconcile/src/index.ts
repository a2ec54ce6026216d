export * from './managed-redis';
export * from './restore-source';
export * from './managed-sentinel';
export * from './sdk-secret';
export * from './tenant-reconciler';
export * from './backends';
export * from './replication-status';
export * from './rolling-upgrade';
