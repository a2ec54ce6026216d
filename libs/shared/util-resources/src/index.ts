export * from './kinds';
export * from './crd';
