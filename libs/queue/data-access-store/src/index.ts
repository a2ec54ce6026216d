export * from './queue-store';
export * from './store-config';
