export * from './kinds';
export * from './crd';
export * from './resource-file';
