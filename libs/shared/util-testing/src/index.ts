export * from './eventually';
export * from './http-call';
export * from './fuzz';
