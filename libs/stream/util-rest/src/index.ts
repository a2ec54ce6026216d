export * from './errors';
export * from './requests';
export * from './auth';
export * from './messages';
