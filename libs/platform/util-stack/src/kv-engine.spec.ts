import { kvEngine } from './kv-engine';
import { startStack } from './stack';

describe('kvEngine', () => {
  it('is Redis 8.2.3 with modules when KV_ENGINE is unset or empty', () => {
    expect(kvEngine({})).toEqual({ name: 'redis', version: '8.2.3', modules: true });
    expect(kvEngine({ KV_ENGINE: '' })).toEqual(kvEngine({}));
  });

  it('is Valkey 9.1.2 without modules for KV_ENGINE=valkey', () => {
    expect(kvEngine({ KV_ENGINE: 'valkey' })).toEqual({ name: 'valkey', version: '9.1.2', modules: false });
  });

  it('refuses another name, naming the allowed ones', () => {
    expect(() => kvEngine({ KV_ENGINE: 'keydb' })).toThrow('KV_ENGINE=keydb is not an engine: use one of redis, valkey');
  });
});

describe('startStack with an unknown KV_ENGINE', () => {
  const saved = process.env.KV_ENGINE;
  afterEach(() => {
    if (saved === undefined) delete process.env.KV_ENGINE;
    else process.env.KV_ENGINE = saved;
  });

  it('fails before it starts anything', async () => {
    process.env.KV_ENGINE = 'redis7';
    await expect(startStack({ from: 'source', stateDir: '/nonexistent/never-made' })).rejects.toThrow('KV_ENGINE=redis7 is not an engine: use one of redis, valkey');
  });
});
