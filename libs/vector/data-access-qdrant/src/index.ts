export * from './vectors';
export * from './qdrant-index-store';
export * from './qdrant-stores';
export * from './purge';
