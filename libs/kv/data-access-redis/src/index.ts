export * from './raw-command';
export * from './kv-backend';
export * from './kv-backends';
export * from './purge';
