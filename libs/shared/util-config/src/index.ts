export * from './load-config';
export * from './redis-url';
export * from './env-doc';
