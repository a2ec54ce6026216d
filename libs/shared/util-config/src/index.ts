export * from './load-config';
export * from './redis-url';
