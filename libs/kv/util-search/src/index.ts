export * from './search';
export * from './schema';
export * from './filter';
export * from './query';
export * from './aggregate';
export * from './listing';
export * from './score-function';
export * from './string-index';
