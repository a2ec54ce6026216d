export * from './credentials';
export * from './tenant-gate';
export * from './tenancy.module';
export * from './tenant-api';
