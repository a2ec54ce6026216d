export * from './errors';
export * from './numbers';
export * from './scores';
export * from './point-id';
export * from './merge-patch';
export * from './limits';
export * from './requests';
export * from './serialise';
