export * from './redis-server';
export * from './eventually';
