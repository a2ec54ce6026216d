export * from './observability.module';
export * from './bootstrap';
export * from './raw-body';
export * from './api-errors';
export * from './request-metrics';
export * from './address-guard';
export * from './header-text';
export * from './log-event';
