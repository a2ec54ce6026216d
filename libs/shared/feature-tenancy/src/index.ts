export * from './credentials';
export * from './tenant-gate';
export * from './tenancy.module';
