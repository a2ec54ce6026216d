export * from './errors';
export * from './kafka-cluster';
export * from './group-consumer';
export * from './partition-reader';
export * from './purge';
export * from './record-batch';
export * from './topic-admin';
