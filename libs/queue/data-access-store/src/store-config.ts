import { z } from 'zod';
import { env } from '@restash/shared/util-config';
import type { QueueStoreOptions } from './queue-store';

/**
 * The variables queue-gateway and queue-worker both read to reach the queue's storage, to spread into their
 * schemas (they must agree):
 *
 * | variable | default | meaning |
 * |---|---|---|
 * | QUEUE_REDIS_URL | (required) | the queue's Redis: BullMQ jobs, DLQ, events; run it with AOF and `maxmemory-policy noeviction` |
 * | QUEUE_PREFIX | restash:queue | prefix of every key the queue writes there |
 * | MESSAGE_RETENTION_MS | 86400000 | how long a delivered or failed message stays readable with `GET /v2/messages/{id}` |
 * | DLQ_RETENTION_MS | 604800000 | how long a DLQ entry is kept (7 days) |
 * | EVENTS_PER_PROJECT | 10000 | events (logs) kept per queue project |
 */
export function queueStoreEnv() {
  return {
    QUEUE_REDIS_URL: env.redisUrl(),
    QUEUE_PREFIX: z.string().regex(/^[A-Za-z0-9:_.-]{1,64}$/, 'letters, digits and : _ . - only').default('restash:queue'),
    MESSAGE_RETENTION_MS: env.positiveInt(86_400_000),
    DLQ_RETENTION_MS: env.positiveInt(7 * 86_400_000),
    EVENTS_PER_PROJECT: env.positiveInt(10_000),
  };
}

/** The store section of a queue service's config, from the {@link queueStoreEnv} variables. */
export function queueStoreConfig(e: {
  QUEUE_REDIS_URL: string;
  QUEUE_PREFIX: string;
  MESSAGE_RETENTION_MS: number;
  DLQ_RETENTION_MS: number;
  EVENTS_PER_PROJECT: number;
}): { redisUrl: string; options: QueueStoreOptions } {
  return {
    redisUrl: e.QUEUE_REDIS_URL,
    options: {
      prefix: e.QUEUE_PREFIX,
      messageRetentionMs: e.MESSAGE_RETENTION_MS,
      dlqRetentionMs: e.DLQ_RETENTION_MS,
      eventsPerProject: e.EVENTS_PER_PROJECT,
    },
  };
}
