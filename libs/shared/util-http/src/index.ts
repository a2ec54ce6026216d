export * from './observability.module';
export * from './bootstrap';
