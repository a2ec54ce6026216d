import type { Redis } from 'ioredis';
import { serverRunId } from './server-run-id';
import { execOrThrow } from './transactions';

const tx = (results: Array<[Error | null, unknown]> | null) => ({ exec: async () => results }) as unknown as ReturnType<Redis['multi']>;

describe('serverRunId', () => {
  it("reads the run_id line of INFO server, and throws when there is none", async () => {
    const client = (info: string) => ({ info: async () => info }) as unknown as Redis;
    expect(await serverRunId(client('# Server\r\nredis_version:8.2.0\r\nrun_id:4f3a9c\r\ntcp_port:6379\r\n'))).toBe('4f3a9c');
    await expect(serverRunId(client('# Server\r\nredis_version:8.2.0\r\n'))).rejects.toThrow('INFO server has no run_id');
  });
});

describe('execOrThrow', () => {
  it("returns each command's result, throws the first command's error, and throws when EXEC was discarded", async () => {
    expect(await execOrThrow(tx([[null, 'OK'], [null, 2]]))).toEqual(['OK', 2]);
    await expect(execOrThrow(tx([[null, 'OK'], [new Error('WRONGTYPE'), null]]))).rejects.toThrow('WRONGTYPE');
    await expect(execOrThrow(tx(null))).rejects.toThrow('transaction was discarded');
  });
});
