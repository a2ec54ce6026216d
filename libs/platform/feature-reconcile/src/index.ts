export * from './managed-redis';
export * from './sdk-secret';
export * from './tenant-reconciler';
export * from './backends';
