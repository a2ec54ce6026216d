import type { Redis } from 'ioredis';

/**
 * The `run_id` of the server a client is connected to (`INFO server`): the same id means the same Redis process
 * (a restart makes a new one).
 * @throws Error when the server cannot be reached, or its INFO has no run_id
 */
export async function serverRunId(client: Redis): Promise<string> {
  const info = await client.info('server');
  const match = /^run_id:(\w+)/m.exec(info);
  if (!match?.[1]) throw new Error('INFO server has no run_id');
  return match[1];
}
