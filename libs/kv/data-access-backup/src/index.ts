export * from './rdb-snapshot';
export * from './snapshot-store';
export * from './restore';
