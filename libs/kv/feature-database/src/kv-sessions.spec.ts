import { Logger } from '@nestjs/common';
import type { KvBackend } from '@restash/kv/data-access-redis';
import { KvError } from '@restash/kv/util-command';
import { registryKeys } from '@restash/shared/data-access-registry';
import { KvBackendFailures } from './backend-failures';
import { KvSessions } from './kv-sessions';
import type { KvBackendPool, KvGrant } from './ports';
import { FakeBackend, FakeRegistry, FakeRuntimeRecords, RecordingObserver, databaseRecord, grant } from './testing/fakes';

class Denied extends Error {}

function setup(options: { controlRunId?: string } = {}) {
  const backend = new FakeBackend();
  const backends: KvBackendPool & { dropped: string[] } = {
    dropped: [],
    get: () => backend as unknown as KvBackend,
    find: () => backend as unknown as KvBackend,
    drop: async (id: string) => void backends.dropped.push(id),
    close: async () => undefined,
  };
  const registry = new FakeRegistry(databaseRecord());
  const records = new FakeRuntimeRecords();
  const observer = new RecordingObserver();
  const opened: string[] = [];
  const sessions = new KvSessions<KvGrant>({
    openGrant: async (credentials) => {
      if (!credentials) throw new Denied('missing');
      opened.push(credentials.token);
      return grant();
    },
    registry,
    records,
    registryCall: (_tenant, run) => run(),
    backends,
    controlServerRunId: async () => options.controlRunId ?? 'run-control',
    failures: new KvBackendFailures(observer),
    limits: { sessionTtlMs: 60_000, scriptTimeoutMs: 1_000, replicaAckTimeoutMs: 100 },
  });
  sessions.start();
  return { backend, backends, registry, records, observer, opened, sessions };
}

/** What an answer of authenticate (a session, or a promise of one) rejects with; undefined when it does not. */
async function rejection(answer: unknown): Promise<unknown> {
  return Promise.resolve(answer).then(
    () => undefined,
    (e: unknown) => e,
  );
}

describe('KvSessions (over fakes of its ports)', () => {
  beforeAll(() => Logger.overrideLogger(false));

  it('opens a token once and reuses its session until the registry announces a change', async () => {
    const { sessions, opened, registry, records } = setup();
    const first = await sessions.authenticate({ token: 't1' });
    await sessions.authenticate({ token: 't1' });
    expect(opened).toEqual(['t1']);
    expect(first).toMatchObject({ tenant: 'acme', role: 'standard', db: 0, policy: { prefix: 'acme.main:' } });
    expect(records.bindings.get('run-kv')).toBe('acme.main');
    for (const listener of registry.listeners) listener('some:key');
    await sessions.authenticate({ token: 't1' });
    expect(opened).toEqual(['t1', 't1']);
  });

  it('answers a cached standard session at once, without a promise, and a new or changed one with a promise', async () => {
    const { sessions, registry } = setup();
    const pending = sessions.authenticate({ token: 't1' });
    expect(pending).toBeInstanceOf(Promise);
    const session = await pending;
    const again = sessions.authenticate({ token: 't1' });
    expect(again).not.toBeInstanceOf(Promise);
    expect(again).toBe(session);
    for (const listener of registry.listeners) listener('some:key');
    expect(sessions.authenticate({ token: 't1' })).toBeInstanceOf(Promise);
  });

  it("lets the gate deny a request without a token, in the gate's words", async () => {
    const { sessions } = setup();
    expect(await rejection(sessions.authenticate(undefined))).toBeInstanceOf(Denied);
    expect(await rejection(sessions.authenticate({ token: '' }))).toBeInstanceOf(Denied);
  });

  it('refuses a database whose server is the control Redis (503), and never binds it', async () => {
    const { sessions, records } = setup({ controlRunId: 'run-kv' });
    const error = await rejection(sessions.authenticate({ token: 't' }));
    expect(error).toBeInstanceOf(KvError);
    expect((error as KvError).status).toBe(503);
    expect((error as KvError).message).toBe('ERR this database is misconfigured: it points at the platform control Redis');
    expect(records.bindings.size).toBe(0);
  });

  it("refuses a server that already backs another tenant's database (503) and closes its connections", async () => {
    const { sessions, records, backends } = setup();
    records.bindings.set('run-kv', 'other.db');
    const error = (await rejection(sessions.authenticate({ token: 't' }))) as KvError;
    expect([error.status, error.message]).toEqual([503, 'ERR this database is misconfigured: its Redis server already backs another KV database']);
    expect(backends.dropped).toEqual(['acme.main']);
  });

  it('answers 503, not 401, when the database cannot be reached, and opens it again once it can', async () => {
    const { sessions, backend, observer, opened } = setup();
    backend.fail = new Error('connect ECONNREFUSED');
    const error = (await rejection(sessions.authenticate({ token: 't' }))) as KvError;
    expect(error.status).toBe(503);
    expect(observer.errors).toEqual(['acme:connection']);
    backend.fail = undefined;
    expect((await sessions.authenticate({ token: 't' })).database.id).toBe('acme.main');
    expect(opened).toEqual(['t', 't']);
  });

  it("closes a database's connections when its record moves to another server or goes", async () => {
    const { sessions, registry, backends } = setup();
    await sessions.authenticate({ token: 't' });
    registry.database = databaseRecord('redis://10.0.0.9:6379/0');
    for (const listener of registry.listeners) listener('some:other:key');
    await new Promise((resolve) => setImmediate(resolve));
    expect(backends.dropped).toEqual([]);
    for (const listener of registry.listeners) listener(registryKeys.kvDatabase('acme.main'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(backends.dropped).toEqual(['acme.main']);
  });
});
