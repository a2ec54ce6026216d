export * from './qdrant-index-store';
