import { Redis, type RedisConfigNodejs } from '@upstash/redis';
import { kvEngine } from '@restash/platform/util-stack';
import { type KvStack, startKvStack } from './kv-stack';

/** The tenant data server these tests run against (KV_ENGINE): `redis` (8.2 with RedisJSON and RediSearch) or `valkey` (9.1). */
export const KV_TEST_ENGINE = kvEngine().name;

/** A running stack of one database, acme/main (and any `others` of acme), and @upstash/redis clients of them. */
export interface AcmeDatabase {
  /** An @upstash/redis client of acme/main, or of another `database` of acme (standard token, no telemetry), with other `options`. */
  client(options?: Partial<RedisConfigNodejs>, database?: string): Redis;
}

/**
 * Starts a kv-gateway stack with one database (acme/main), and the `others` databases of acme each on a server of its
 * own, in a beforeAll of the describe block that calls it, and stops it in an afterAll: the set-up of the specs that
 * drive the API with @upstash/redis alone (or with the libraries built on it).
 */
export function acmeDatabase(...others: string[]): AcmeDatabase {
  let stack: KvStack;
  beforeAll(async () => {
    stack = await startKvStack({ acme: ['main', ...others].map((name) => ({ name })) });
  });
  afterAll(() => stack.stop());
  return {
    client: (options = {}, database = 'main') =>
      new Redis({ url: stack.url, token: stack.tokens('acme', database).standard, enableTelemetry: false, ...options }),
  };
}
