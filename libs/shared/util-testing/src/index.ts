export * from './redis-server';
export * from './eventually';
export * from './python-services';
export * from './http-call';
export * from './kafka';
export * from './node-service';
export * from './fuzz';
