export * from './qdrant-index-store';
export * from './purge';
