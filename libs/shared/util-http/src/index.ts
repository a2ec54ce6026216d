export * from './observability.module';
export * from './bootstrap';
export * from './raw-body';
