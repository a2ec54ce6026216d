import { Client, Receiver } from '@upstash/qstash';
import { Client as WorkflowClient } from '@upstash/workflow';
import { Redis, type RedisOptions } from 'ioredis';
import { type QueueStack, type TestProject, startQueueStack } from './queue-stack';
import { type Sink, startSink } from './sink';

/** A destination (or another server) the tests start beside the stack. */
export interface Closable {
  close(): Promise<void>;
}

/**
 * A queue stack and a destination, for the tests of one describe block: started in its beforeAll, stopped in its
 * afterAll. Read `stack` and `sink` in tests and in later hooks (they throw before the stack runs).
 */
export interface QueueTestbed<S extends Closable> {
  readonly stack: QueueStack;
  readonly sink: S;
  /** An @upstash/qstash Client of a project, with its standard token (`token`) or its read-only one (`readonlyToken`). */
  client(tenant?: string, project?: string, token?: 'token' | 'readonlyToken'): Client;
  /** The official Receiver of a project's signing keys. */
  receiver(tenant?: string, project?: string): Receiver;
  /** What @upstash/workflow's tests use of a project: a QStash Client and a Receiver for `serve`, and a workflow Client. */
  workflowClients(tenant?: string, project?: string): { qstash: Client; receiver: Receiver; client: WorkflowClient };
  /** A connection to `url` (one of the stack's Redis servers), disconnected in the afterAll before the stack stops. */
  redis(url: string, options?: RedisOptions): Redis;
  /** `closable`, closed in the afterAll before the connections and the stack (in the order given). */
  closes<T extends { close(): Promise<unknown> }>(closable: T): T;
}

/**
 * Starts a queue stack ({@link startQueueStack}: queue-gateway in this process, queue-worker in its own) with
 * `tenants`, and a destination (by default a {@link Sink}), together in a beforeAll of the describe block that calls
 * it; its afterAll closes what the tests opened through the testbed, then stops the stack and the destination.
 */
export function queueTestbed<S extends Closable = Sink>(
  tenants: Record<string, TestProject[]>,
  options: { destination?: () => Promise<S>; workerEnv?: NodeJS.ProcessEnv; timeoutMs?: number; queueServers?: string[] } = {},
): QueueTestbed<S> {
  let stack: QueueStack | undefined;
  let sink: S | undefined;
  const closables: Array<{ close(): Promise<unknown> }> = [];
  const connections: Redis[] = [];
  beforeAll(async () => {
    const destination = options.destination ?? (startSink as unknown as () => Promise<S>);
    [stack, sink] = await Promise.all([startQueueStack(tenants, options.workerEnv, options.queueServers), destination()]);
  }, options.timeoutMs ?? 120_000);
  afterAll(async () => {
    for (const closable of closables) await closable.close();
    for (const connection of connections) connection.disconnect();
    await stack?.stop();
    await sink?.close();
  });
  const running = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the queue testbed is not started: read it in a test or a later hook');
    return value;
  };
  const testbed: QueueTestbed<S> = {
    get stack() {
      return running(stack);
    },
    get sink() {
      return running(sink);
    },
    client: (tenant = 'acme', project = 'main', token = 'token') => new Client({ baseUrl: testbed.stack.url, token: testbed.stack.secrets(tenant, project)[token] }),
    receiver: (tenant = 'acme', project = 'main') => {
      const { currentSigningKey, nextSigningKey } = testbed.stack.secrets(tenant, project);
      return new Receiver({ currentSigningKey, nextSigningKey });
    },
    workflowClients: (tenant = 'acme', project = 'main') => ({
      qstash: testbed.client(tenant, project),
      receiver: testbed.receiver(tenant, project),
      client: new WorkflowClient({ baseUrl: testbed.stack.url, token: testbed.stack.secrets(tenant, project).token }),
    }),
    redis: (url, redisOptions = {}) => {
      const connection = new Redis(url, redisOptions);
      connections.push(connection);
      return connection;
    },
    closes: (closable) => {
      closables.push(closable);
      return closable;
    },
  };
  return testbed;
}
