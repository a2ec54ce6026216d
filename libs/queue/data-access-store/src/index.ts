export * from './queue-store';
export * from './store-config';
export * from './topics';
export * from './publisher';
export * from './lanes';
export * from './schedules';
export * from './workflow-runs';
export * from './workflow-waiters';
