export * from './ast';
export * from './filter-syntax-error';
export * from './parse';
export * from './glob';
export * from './evaluate';
export * from './qdrant';
