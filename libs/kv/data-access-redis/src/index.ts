export * from './raw-command';
export type { CommandRunner, MonitorHandlers, Outcome, Subscription, SubscriptionHandlers, TransactionOutcome } from './command-runner';
export * from './kv-backend';
export * from './kv-backends';
export * from './purge';
