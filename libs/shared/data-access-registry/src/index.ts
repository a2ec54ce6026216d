export * from './records';
export * from './credentials';
export * from './sealed';
export * from './tenant-spec';
export * from './registry-reader';
export * from './registry-writer';
export * from './daily-quota';
export * from './resources';
