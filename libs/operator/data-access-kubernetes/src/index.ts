export * from './errors';
export * from './kube-config';
export * from './kubernetes-client';
export * from './events';
export * from './watch';
export * from './leader-election';
