import { z } from 'zod';
import { env } from '@restash/shared/util-config';
import type { QueueStoreOptions } from './queue-store';
import { MAIN_QUEUE_SERVER, type QueueServer } from './queue-servers';

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

const SERVER_NAME = /^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$/;

/**
 * The variable of the services that reach every queue Redis server (queue-gateway, the operator, tenants-cli), to
 * spread into their schemas beside {@link queueStoreEnv} (docs/queue.md, "Queue: several queue Redis servers"):
 *
 * | variable | default | meaning |
 * |---|---|---|
 * | QUEUE_REDIS_SERVERS | (empty) | more queue Redis servers, space-separated `<name>=<url>` (names: lower-case letters, digits, `-`; the server of QUEUE_REDIS_URL is `main`); new queue projects are spread over all of them, and each server needs a queue-worker of its own |
 */
export function queueServersEnv() {
  const url = env.redisUrl();
  return {
    QUEUE_REDIS_SERVERS: z
      .string()
      .default('')
      .transform((text, ctx) => {
        const servers: QueueServer[] = [];
        for (const entry of text.split(/\s+/).filter((e) => e !== '')) {
          const at = entry.indexOf('=');
          const name = at < 0 ? '' : entry.slice(0, at);
          const parsed = url.safeParse(entry.slice(at + 1));
          if (!SERVER_NAME.test(name)) ctx.addIssue({ code: 'custom', message: `'${entry.split('=')[0]}': each entry is <name>=<url>, the name of lower-case letters, digits and - (at most 32)` });
          else if (name === MAIN_QUEUE_SERVER || servers.some((s) => s.name === name)) ctx.addIssue({ code: 'custom', message: `server name '${name}' is used twice ('${MAIN_QUEUE_SERVER}' is QUEUE_REDIS_URL's)` });
          else if (!parsed.success) ctx.addIssue({ code: 'custom', message: `server '${name}': ${parsed.error.issues[0]?.message ?? 'not a Redis URL'}` });
          else servers.push({ name, url: parsed.data });
        }
        return servers;
      }),
  };
}

/** Every queue Redis server, {@link MAIN_QUEUE_SERVER} (QUEUE_REDIS_URL) first, from the {@link queueServersEnv} variables. */
export function queueServersConfig(e: { QUEUE_REDIS_URL: string; QUEUE_REDIS_SERVERS: QueueServer[] }): QueueServer[] {
  return [{ name: MAIN_QUEUE_SERVER, url: e.QUEUE_REDIS_URL }, ...e.QUEUE_REDIS_SERVERS];
}
