export * from './work-queue';
export * from './conditions';
