import { Redis, type RedisConfigNodejs } from '@upstash/redis';
import { kvEngine } from '@restash/platform/util-stack';
import { type KvStack, startKvStack } from './kv-stack';

/** The tenant data server these tests run against (KV_ENGINE): `redis` (8.2 with RedisJSON and RediSearch) or `valkey` (9.1). */
export const KV_TEST_ENGINE = kvEngine().name;

/** A running stack of one database, acme/main, and @upstash/redis clients of it. */
export interface AcmeDatabase {
  /** An @upstash/redis client of acme/main (standard token, no telemetry), with other `options`. */
  client(options?: Partial<RedisConfigNodejs>): Redis;
}

/**
 * Starts a kv-gateway stack with one database (acme/main) in a beforeAll of the describe block that calls it, and
 * stops it in an afterAll: the set-up of the specs that drive the API with @upstash/redis alone.
 */
export function acmeDatabase(): AcmeDatabase {
  let stack: KvStack;
  beforeAll(async () => {
    stack = await startKvStack({ acme: [{ name: 'main' }] });
  });
  afterAll(() => stack.stop());
  return {
    client: (options = {}) => new Redis({ url: stack.url, token: stack.tokens('acme', 'main').standard, enableTelemetry: false, ...options }),
  };
}
