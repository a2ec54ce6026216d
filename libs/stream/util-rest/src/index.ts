export * from './errors';
export * from './requests';
export * from './messages';
