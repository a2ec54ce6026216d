export * from './kv-error';
export * from './request';
export * from './encode';
export * from './command-table';
export * from './policy';
export * from './sse';
export * from './gateway-user';
export * from './composite';
