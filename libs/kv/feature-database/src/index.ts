export * from './ports';
export * from './backend-failures';
export * from './acl-users';
export * from './kv-sessions';
export * from './kv-commands';
export * from './search-shadows';
