export * from './redis-connection';
export * from './server-run-id';
export * from './transactions';
