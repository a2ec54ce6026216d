export * from './backup-plan';
export * from './backup-controller';
