import { type ResolvedToken, type TokenRecord, streamUsername, tokenDigest } from '@restash/shared/data-access-registry';
import { type DenialTable, TenantDenied, TenantGate, denialAnswer } from './tenant-gate';

// The gate is pure logic over two lookups; these in-memory ones stand for the registry and the quota.
const limits = { maxRequestBytes: 100, dailyRequestLimit: 2 };
const cluster = { id: 'c1', tenant: 'acme', name: 'main', brokers: ['b:9092'], prefix: 'acme.', topics: {}, ...limits };
const project = { id: 'p1', tenant: 'acme', ...limits };

function token(secret: string, api: TokenRecord['api'], resource: string, role: TokenRecord['role'] = 'standard'): [string, TokenRecord] {
  return [secret, { digest: tokenDigest(secret), tenant: 'acme', api, resource, role }];
}

function gate(options: { failing?: boolean } = {}) {
  const tokens = new Map([token('s', 'stream', 'c1'), token('r', 'stream', 'c1', 'readonly'), token('q', 'queue', 'p1'), token('gone', 'queue', 'p0')]);
  const counts = new Map<string, number>();
  const up = <T>(value: T): Promise<T> => (options.failing ? Promise.reject(new Error('ECONNREFUSED')) : Promise.resolve(value));
  const reader = {
    resolveToken: (t: string) => up<ResolvedToken | null>(tokens.has(t) ? { digest: tokenDigest(t), record: tokens.get(t) as TokenRecord } : null),
    kvDatabase: () => up(null),
    vectorIndex: () => up(null),
    streamCluster: (id: string) => up(id === 'c1' ? (cluster as never) : null),
    queueProject: (id: string) => up(id === 'p1' ? (project as never) : null),
  };
  const quota = {
    consume: async (api: string, resource: string, count: number, limit: number) => {
      const used = counts.get(`${api}/${resource}`) ?? 0;
      if (used + count > limit) return { allowed: false, used };
      counts.set(`${api}/${resource}`, used + count);
      return { allowed: true, used: used + count };
    },
  };
  return new TenantGate(reader, quota);
}

/** The TenantDenied a call throws, synchronously or as its promise's rejection. */
async function denial(call: Promise<unknown> | (() => unknown)): Promise<TenantDenied> {
  const error = await (typeof call === 'function' ? Promise.resolve().then(call) : call).then(() => undefined, (e: unknown) => e);
  if (!(error instanceof TenantDenied)) throw new Error(`expected a TenantDenied, got ${String(error)}`);
  return error;
}

describe('TenantGate.open', () => {
  it('opens the resource of a token of the API, with the tenant and the rights of its role', async () => {
    const grant = await gate().open('stream', { token: 'r', username: streamUsername('c1', 'readonly') });
    expect(grant).toMatchObject({ api: 'stream', tenant: 'acme', resource: { id: 'c1' }, readOnly: true });
    expect((await gate().open('queue', { token: 'q' })).readOnly).toBe(false);
  });

  it('denies missing credentials, unknown tokens, tokens of another API or of a resource gone, and a wrong user name', async () => {
    expect((await denial(gate().open('queue', undefined))).reason).toBe('missing');
    expect((await denial(gate().open('queue', { token: 'nope' }))).reason).toBe('unknown');
    expect((await denial(gate().open('queue', { token: 's' }))).reason).toBe('unknown');
    expect((await denial(gate().open('queue', { token: 'gone' }))).reason).toBe('unknown');
    expect((await denial(gate().open('stream', { token: 's', username: streamUsername('c1', 'readonly') }))).reason).toBe('unknown');
    // A user name only means something to the Stream API.
    expect((await denial(gate().open('queue', { token: 'q', username: 'p1' }))).reason).toBe('unknown');
  });

  it('denies with registry-unavailable, keeping the cause, when the registry fails', async () => {
    const denied = await denial(gate({ failing: true }).open('queue', { token: 'q' }));
    expect(denied).toMatchObject({ reason: 'registry-unavailable', tenant: '' });
    expect(String(denied.cause)).toContain('ECONNREFUSED');
  });
});

describe('TenantGate.admit', () => {
  it('checks write rights, then size, then the daily count, which only admitted requests use', async () => {
    const g = gate();
    const readOnly = await g.open('stream', { token: 'r', username: streamUsername('c1', 'readonly') });
    expect(await denial(() => g.admit(readOnly, { write: true, bytes: 1000 }))).toMatchObject({ reason: 'read-only', tenant: 'acme' });
    await g.admit(readOnly, { write: false, bytes: 100 });
    expect(await denial(() => g.admit(readOnly, { write: false, bytes: 101 }))).toMatchObject({ reason: 'too-large', limit: 100, actual: 101 });
    await g.admit(readOnly, { write: false, bytes: 0 });
    expect(await denial(() => g.admit(readOnly, { write: false, bytes: 0 }))).toMatchObject({ reason: 'daily-limit', limit: 2, actual: 2 });
  });

  it('counts units against the daily limit', async () => {
    const g = gate();
    const grant = await g.open('queue', { token: 'q' });
    expect(await denial(() => g.admit(grant, { write: true, bytes: 0, units: 3 }))).toMatchObject({ reason: 'daily-limit', actual: 0 });
    await g.admit(grant, { write: true, bytes: 0, units: 2 });
  });
});

describe('registryCall', () => {
  it('turns a failure into registry-unavailable for the tenant, and passes a denial through', async () => {
    const g = gate();
    expect(await denial(g.registryCall('acme', () => Promise.reject(new Error('down'))))).toMatchObject({ reason: 'registry-unavailable', tenant: 'acme' });
    expect(await denial(g.registryCall('acme', () => Promise.reject(new TenantDenied('unknown'))))).toMatchObject({ reason: 'unknown' });
    expect(await g.registryCall('acme', async () => 7)).toBe(7);
  });
});

describe('denialAnswer', () => {
  it('answers from the table, fixed messages or made from the detail', () => {
    const table: DenialTable = {
      missing: [401, 'no token'],
      unknown: [401, 'bad token'],
      'read-only': [403, 'read-only'],
      'too-large': [413, (d) => `${d.actual} > ${d.limit}`],
      'daily-limit': [429, (d) => `limit ${d.limit}`],
      'registry-unavailable': [503, 'later'],
      'unread-answers': [429, (d) => `unread ${d.actual}`],
    };
    expect(denialAnswer(table, new TenantDenied('too-large', { limit: 1, actual: 2 }))).toEqual({ status: 413, message: '2 > 1' });
    expect(denialAnswer(table, new TenantDenied('missing'))).toEqual({ status: 401, message: 'no token' });
  });
});
