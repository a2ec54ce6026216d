export * from './ports';
export * from './index-state';
export * from './vector-index.service';
