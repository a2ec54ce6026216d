import type { KvDatabaseRecord } from '@restash/shared/data-access-registry';
import { volumeBackedPurgers } from './engines';
import type { ResourcePurgers } from './teardown';

const record: KvDatabaseRecord = { id: 'kv_1', tenant: 'shop', name: 'cache', redisUrl: 'redis://gw:pw@10.0.0.9:6379/0', maxRequestBytes: 1, dailyRequestLimit: 0, durability: 'async' };
const boundTo = async () => null;
const purgers = (kv: ResourcePurgers['kv']): ResourcePurgers => ({ kv, vector: async () => undefined, stream: async () => undefined, queue: async () => undefined });

describe('volumeBackedPurgers', () => {
  it("passes a purge's answer through without asking about volumes", async () => {
    const volumesGo = jest.fn(async () => true);
    await expect(volumeBackedPurgers(purgers(async () => 'other'), volumesGo).kv(record, boundTo)).resolves.toBe('other');
    expect(volumesGo).not.toHaveBeenCalled();
  });

  it('counts an unreachable server whose volumes are going as purged', async () => {
    const volumesGo = jest.fn(async () => true);
    const unreachable = async (): Promise<'purged'> => {
      throw new Error('connect ECONNREFUSED 10.0.0.9:6379');
    };
    await expect(volumeBackedPurgers(purgers(unreachable), volumesGo).kv(record, boundTo)).resolves.toBe('purged');
    expect(volumesGo).toHaveBeenCalledWith(record);
  });

  it("throws the purge's error when the volumes stay, or when that cannot be told", async () => {
    const unreachable = async (): Promise<'purged'> => {
      throw new Error('connect ECONNREFUSED 10.0.0.9:6379');
    };
    await expect(volumeBackedPurgers(purgers(unreachable), async () => false).kv(record, boundTo)).rejects.toThrow('ECONNREFUSED');
    const unknown = async (): Promise<boolean> => {
      throw new Error('the API server is away');
    };
    await expect(volumeBackedPurgers(purgers(unreachable), unknown).kv(record, boundTo)).rejects.toThrow('ECONNREFUSED');
  });
});
