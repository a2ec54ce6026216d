import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { openRedis } from '@restash/shared/data-access-redis';
import { QueueStore, type QueueStoreOptions } from './queue-store';

/** The name of the queue Redis server of QUEUE_REDIS_URL, and of every queue project whose record names none. */
export const MAIN_QUEUE_SERVER = 'main';

/** One queue Redis server: its name (what a QueueProject record's `queueServer` holds) and its URL. */
export interface QueueServer {
  name: string;
  url: string;
}

/**
 * The key on a queue Redis server that says a queue project's data lives there (its value: the server's name).
 * The placement writes it; QueueStore.purgeProject deletes it with the rest of the project.
 */
export function queueHomeKey(prefix: string, project: string): string {
  return `${prefix}:home:${project}`;
}

/**
 * The server a new queue project goes to: each server's name is hashed with the project id (rendezvous hashing over
 * SHA-256) and the highest wins, so that every applier places a project alike and each server gets about its share.
 * @param names the configured servers' names, at least one
 */
export function rendezvousServer(project: string, names: readonly string[]): string {
  let best = names[0] ?? MAIN_QUEUE_SERVER;
  let bestScore = '';
  for (const name of names) {
    const score = createHash('sha256').update(`${name}\u0000${project}`).digest('hex');
    if (score > bestScore) [best, bestScore] = [name, score];
  }
  return best;
}

/**
 * Where each queue project's messages, schedules, DLQ and events live when the platform has several queue Redis
 * servers (docs/queue.md, "Queue: several queue Redis servers"). The registry writer asks it for a project whose
 * record names no server (a new project, a record written before servers had names, or a registry lost with its
 * control Redis): the server holding the project's home key ({@link queueHomeKey}) keeps it; else a project that
 * was in the registry without a server name stays on {@link MAIN_QUEUE_SERVER}, where its data was written; else
 * {@link rendezvousServer} picks one, and its home key is written there. Adding a server therefore moves no project.
 */
export class QueuePlacement {
  /**
   * @param servers each configured server's name and a connection to it ({@link MAIN_QUEUE_SERVER} first)
   * @param prefix QUEUE_PREFIX
   */
  constructor(
    private readonly servers: ReadonlyArray<{ name: string; redis: Redis }>,
    private readonly prefix: string,
  ) {}

  /**
   * @param project the queue project's id
   * @param registered whether the registry held a record of the project (one without a server name)
   * @returns the name of the project's server
   * @throws Error when a server cannot be asked (the placement must not guess while one is away)
   */
  async place(project: string, registered: boolean): Promise<string> {
    const key = queueHomeKey(this.prefix, project);
    const homes = await Promise.all(
      this.servers.map(async ({ name, redis }) => {
        try {
          return (await redis.exists(key)) === 1 ? name : undefined;
        } catch (error) {
          throw new Error(`queue server '${name}' cannot be reached: ${error instanceof Error ? error.message : String(error)}`);
        }
      }),
    );
    const found = homes.find((name) => name !== undefined);
    if (found) return found;
    const chosen = registered ? MAIN_QUEUE_SERVER : rendezvousServer(project, this.servers.map((s) => s.name));
    const server = this.servers.find((s) => s.name === chosen) ?? this.servers[0];
    if (!server) throw new Error('no queue server is configured');
    await server.redis.set(key, server.name);
    return server.name;
  }
}

/**
 * Connections to the queue Redis servers for the appliers (the operator, tenants-cli), each opened on first use, so
 * that an apply or a deletion without queue projects never connects: a {@link QueueStore} per server for purges, and
 * the {@link QueuePlacement} of new projects over all of them. Commands fail after `maxRetriesPerRequest` reconnects.
 */
export class QueueServerPool {
  private readonly opened = new Map<string, { redis: Redis; store?: QueueStore }>();

  /**
   * @param servers every queue server ({@link MAIN_QUEUE_SERVER} first: queueServersConfig)
   * @param onError called with each connection error (ioredis prints a stack for each one nobody listens to)
   */
  constructor(
    private readonly servers: readonly QueueServer[],
    private readonly options: QueueStoreOptions,
    private readonly onError: (server: string, error: unknown) => void,
    private readonly maxRetriesPerRequest = 3,
  ) {}

  /**
   * The store on a server (a project record's `queueServer`; absent: {@link MAIN_QUEUE_SERVER}).
   * @throws Error for a server this service is not configured with (QUEUE_REDIS_SERVERS)
   */
  store(name: string = MAIN_QUEUE_SERVER): QueueStore {
    const server = this.open(name);
    if (!server.store) {
      server.store = new QueueStore(server.redis, this.options);
      server.store.queue.on('error', () => undefined); // the connection's listener reports it
    }
    return server.store;
  }

  /** The placement of projects over every server: QueuePlacement.place, for RegistryWriter's `placeQueueProject`. */
  place(project: string, registered: boolean): Promise<string> {
    return new QueuePlacement(this.servers.map((s) => ({ name: s.name, redis: this.open(s.name).redis })), this.options.prefix).place(project, registered);
  }

  /** Closes what was opened. */
  async close(): Promise<void> {
    for (const { redis, store } of this.opened.values()) {
      await store?.close().catch(() => undefined);
      redis.disconnect();
    }
    this.opened.clear();
  }

  private open(name: string): { redis: Redis; store?: QueueStore } {
    let found = this.opened.get(name);
    if (!found) {
      const server = this.servers.find((s) => s.name === name);
      if (!server) throw new Error(`queue server '${name}' is not configured (QUEUE_REDIS_SERVERS)`);
      const redis = openRedis(server.url, { maxRetriesPerRequest: this.maxRetriesPerRequest });
      redis.on('error', (error: unknown) => this.onError(name, error));
      found = { redis };
      this.opened.set(name, found);
    }
    return found;
  }
}
