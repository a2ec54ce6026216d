export * from './ports';
export * from './infrastructure-retry';
export * from './retry-later';
export * from './delivery-processor';
