export * from './rdb-snapshot';
