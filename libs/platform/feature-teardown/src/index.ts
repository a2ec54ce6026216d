export * from './teardown';
export * from './engines';
