export * from './eventually';
export * from './http-call';
export * from './fuzz';
export * from './test-tenants';
export * from './gauge-sink';
