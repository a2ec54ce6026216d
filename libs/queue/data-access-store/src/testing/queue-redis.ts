import { Redis } from 'ioredis';
import { QUEUE_REDIS_CONFIG, type RedisServer, startRedisServer } from '@restash/platform/util-stack';
import type { QueueStoreOptions } from '../queue-store';

/** The options of the QueueStore of these tests: a minute's retention, 100 events a project. */
export const TEST_STORE_OPTIONS: QueueStoreOptions = { prefix: 'test:queue', messageRetentionMs: 60_000, dlqRetentionMs: 60_000, eventsPerProject: 100 };

/** The queue Redis of a test file: its server and the tests' connection, set once the file's `beforeAll` ran. */
export interface TestQueueRedis {
  readonly server: RedisServer;
  readonly redis: Redis;
}

/**
 * For integration tests: a queue Redis (docs/development.md, "Test tiers"; QUEUE_REDIS_CONFIG) started before the
 * file's tests, with one connection, and stopped after them. Call it at the top of a `describe`; `stop` (closing
 * what the tests built on the connection) runs before the connection and the server go.
 */
export function useQueueRedis(stop?: () => unknown): TestQueueRedis {
  const state: { server?: RedisServer; redis?: Redis } = {};
  beforeAll(async () => {
    state.server = await startRedisServer({ config: QUEUE_REDIS_CONFIG });
    state.redis = new Redis(state.server.url);
  });
  afterAll(async () => {
    await stop?.();
    state.redis?.disconnect();
    await state.server?.stop();
  });
  return {
    get server() {
      return started(state.server);
    },
    get redis() {
      return started(state.redis);
    },
  };
}

function started<T>(value: T | undefined): T {
  if (value === undefined) throw new Error('the queue Redis starts in beforeAll');
  return value;
}
