import { EventEmitter } from 'node:events';
import { Readable } from 'node:stream';
import type { ServerResponse } from 'node:http';
import Fastify, { type FastifyInstance } from 'fastify';
import { type ResolvedToken, type TokenRecord, tokenDigest } from '@restash/shared/data-access-registry';
import { type TenantApiErrors, type TenantSession, UnreadAnswers, operation, registerTenantApi } from './tenant-api';
import { type Grant, TenantDenied, TenantGate } from './tenant-gate';

// The routes over Fastify's in-process injection, and a gate over an in-memory registry: what is
// under test is the order of the steps and the answers, not a backend.
class DemoError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const ERRORS: TenantApiErrors = {
  methods: ['GET', 'POST', 'DELETE'],
  encode: (status, message) => JSON.stringify({ error: message, status }),
  type: DemoError,
  denials: {
    missing: [401, 'no token'],
    unknown: [401, 'bad token'],
    'read-only': [403, 'read-only'],
    'too-large': [413, (d) => `${d.actual} > ${d.limit}`],
    'daily-limit': [429, (d) => `over ${d.limit}`],
    'registry-unavailable': [503, 'registry down'],
    'unread-answers': [429, (d) => `unread ${d.actual} of ${d.limit}`],
  },
  notFound: (path) => new DemoError(404, `no ${path}`),
  notAllowed: (method, _path, allowed, name) => new DemoError(405, `${method} not on ${name}, use ${allowed.join('/')}`),
  allowHeader: true,
};

interface Session extends TenantSession {
  name: string;
}

/**
 * The demo API on Fastify's injection. `cachedSessions`: a token's session, once opened, is answered at once (no
 * promise), as KvSessions answers cached sessions; otherwise every open is a promise.
 */
async function start(options: { registryDown?: boolean; cachedSessions?: boolean } = {}) {
  const record = (role: TokenRecord['role']): TokenRecord => ({ digest: tokenDigest(role), tenant: 'acme', api: 'queue', resource: 'p1', role });
  const up = <T>(value: T) => (options.registryDown ? Promise.reject(new Error('ECONNREFUSED')) : Promise.resolve(value));
  const reader = {
    resolveToken: (t: string) => up<ResolvedToken | null>(t === 'standard' || t === 'readonly' ? { digest: tokenDigest(t), record: record(t) } : null),
    kvDatabase: () => up(null),
    vectorIndex: () => up(null),
    streamCluster: () => up(null),
    queueProject: () => up({ id: 'p1', tenant: 'acme', maxRequestBytes: 10, dailyRequestLimit: 0 } as never),
  };
  const gate = new TenantGate(reader, { consume: async () => ({ allowed: true, used: 1 }) });
  const observed: string[] = [];
  const backendErrors: string[] = [];
  const app: FastifyInstance = Fastify();
  const sessions = new Map<string, Session>();
  registerTenantApi<Session>(app, {
    errors: ERRORS,
    credentials: { scheme: 'bearer' },
    operations: [
      operation<Session, number, string>({
        name: 'echo',
        methods: ['POST'],
        write: true,
        route: ['/echo/*', '/say/it/*'],
        prepare: (call) => {
          if (call.rest === 'bad') throw new DemoError(400, 'bad param');
          return call.body?.length ?? 0;
        },
        run: async (session, length, call) => {
          if (call.rest === 'boom') throw new Error('unexpected');
          return `${session.name}:${call.rest}:${length}`;
        },
        encode: (text) => ({ status: 201, body: JSON.stringify({ text }), headers: { 'x-demo': '1' } }),
      }),
      operation<Session, undefined, void>({
        name: 'peek',
        methods: ['GET'],
        write: false,
        route: '/echo/*',
        run: async () => undefined,
        encode: () => ({ status: 204 }),
      }),
    ],
    open: (credentials) => {
      const cached = options.cachedSessions && credentials ? sessions.get(credentials.token) : undefined;
      if (cached) return cached;
      return gate.open('queue', credentials).then((grant: Grant<'queue'>) => {
        const session = { tenant: grant.tenant, grant, name: grant.readOnly ? 'reader' : 'writer' };
        if (credentials) sessions.set(credentials.token, session);
        return session;
      });
    },
    gate,
    metrics: {
      observeRequest: (tenant, op, status) => observed.push(`${tenant}/${op}/${status}`),
      backendError: (tenant, kind) => backendErrors.push(`${tenant}/${kind}`),
    },
    logger: { log: () => undefined, warn: () => undefined, error: () => undefined },
    bodyLimitBytes: 1000,
    unreadAnswerBytes: 1 << 20,
    notFound: ['/say/it/'],
  });
  await app.ready();
  const call = async (method: 'GET' | 'POST' | 'DELETE', url: string, token?: string, payload?: string | Readable) => {
    const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
    // A stream is sent chunked, as an HTTP client sends a body of unknown length.
    if (payload instanceof Readable) headers['transfer-encoding'] = 'chunked';
    const response = await app.inject({ method, url, payload, headers });
    return { status: response.statusCode, body: response.body, headers: response.headers };
  };
  return { app, call, observed, backendErrors };
}

describe('UnreadAnswers', () => {
  const response = () => new EventEmitter() as unknown as ServerResponse;
  const denied = (f: () => void) => {
    try {
      f();
    } catch (error) {
      return error instanceof TenantDenied ? `${error.reason} ${error.actual}/${error.limit}` : error;
    }
    return 'passed';
  };

  it('holds each tenant’s answers until their responses close, and denies past the limit', () => {
    const unread = new UnreadAnswers(100);
    const [a, b, c] = [response(), response(), response()];
    expect(denied(() => unread.hold('acme', 60, a))).toBe('passed');
    expect(denied(() => unread.hold('acme', 60, b))).toBe('unread-answers 60/100');
    expect(denied(() => unread.admit('acme'))).toBe('passed');
    expect(denied(() => unread.hold('acme', 40, c))).toBe('passed');
    expect(denied(() => unread.admit('acme'))).toBe('unread-answers 100/100');
    // Another tenant is counted apart.
    expect(denied(() => unread.hold('rival', 90, response()))).toBe('passed');
    a.emit('close');
    expect(denied(() => unread.admit('acme'))).toBe('passed');
    expect(denied(() => unread.hold('acme', 60, b))).toBe('passed');
    b.emit('close');
    c.emit('close');
    expect(denied(() => unread.hold('acme', 100, response()))).toBe('passed');
  });

  it('always sends one answer, whatever its size', () => {
    const unread = new UnreadAnswers(100);
    expect(denied(() => unread.hold('acme', 5000, response()))).toBe('passed');
    expect(denied(() => unread.admit('acme'))).toBe('unread-answers 5000/100');
  });
});

describe('registerTenantApi', () => {
  it('runs a matched operation for the session of its credentials, and answers what it encodes', async () => {
    const { app, call, observed } = await start();
    expect(await call('POST', '/echo/x', 'standard', 'abc')).toMatchObject({ status: 201, body: '{"text":"writer:x:3"}', headers: { 'x-demo': '1' } });
    expect(await call('GET', '/echo/x', 'readonly')).toMatchObject({ status: 204, body: '' });
    expect(observed).toEqual(['acme/echo/201', 'acme/peek/204']);
    await app.close();
  });

  it('gives an operation the raw path after its route’s static prefix, for each of its routes', async () => {
    const { app, call } = await start();
    expect((await call('POST', '/echo/a%2Fb/c', 'standard')).body).toBe('{"text":"writer:a%2Fb/c:0"}');
    expect((await call('POST', '/say/%69t/x%20y', 'standard')).body).toBe('{"text":"writer:x%20y:0"}');
    expect((await call('POST', '/echo/', 'standard')).body).toBe('{"text":"writer::0"}');
    // An absolute-form target counts from its path.
    expect((await call('POST', 'http://gateway:8080/echo/a/b?x=1', 'standard')).body).toBe('{"text":"writer:a/b:0"}');
    await app.close();
  });

  it('answers 404 on the paths the API names, although a wildcard route would take them', async () => {
    const { app, call } = await start();
    expect(await call('POST', '/say/it/', 'standard')).toMatchObject({ status: 404, body: '{"error":"no /say/it/","status":404}' });
    expect((await call('POST', '/say/it/x', 'standard')).status).toBe(201);
    await app.close();
  });

  it('answers 404, then 405 with Allow, before asking for credentials', async () => {
    const { app, call, observed } = await start();
    expect(await call('GET', '/nowhere')).toMatchObject({ status: 404, body: '{"error":"no /nowhere","status":404}' });
    const refused = await call('DELETE', '/echo/x');
    expect(refused).toMatchObject({ status: 405, body: '{"error":"DELETE not on echo, use POST/GET","status":405}', headers: { allow: 'POST, GET' } });
    expect((await call('POST', '/echo/x')).body).toBe('{"error":"no token","status":401}');
    expect(observed).toEqual(['/unknown/404', '/echo/405', '/echo/401']);
    await app.close();
  });

  it('answers denials from the API table: credentials, then prepare, then admission (read-only, size)', async () => {
    const { app, call } = await start();
    expect((await call('POST', '/echo/x', 'nope')).body).toBe('{"error":"bad token","status":401}');
    expect((await call('POST', '/echo/bad', 'readonly', 'x')).body).toBe('{"error":"bad param","status":400}');
    expect((await call('POST', '/echo/x', 'readonly', 'x')).body).toBe('{"error":"read-only","status":403}');
    expect((await call('POST', '/echo/x', 'standard', '12345678901')).body).toBe('{"error":"11 > 10","status":413}');
    await app.close();
  });

  it('reads a body only once the credentials open a session: without them, no byte of it (401, not 413)', async () => {
    const { app, call } = await start();
    // Streamed, with no declared length (a declared one over the limit is refused up front), over the 1000-byte limit.
    const big = () => Readable.from([Buffer.alloc(3000, 'x'), Buffer.alloc(3000, 'x')]);
    expect((await call('POST', '/echo/x', undefined, big())).body).toBe('{"error":"no token","status":401}');
    expect((await call('POST', '/echo/x', 'nope', big())).body).toBe('{"error":"bad token","status":401}');
    expect((await call('POST', '/echo/x', 'standard', big())).status).toBe(413);
    // A path no operation serves is answered without reading the body too.
    expect((await call('POST', '/nowhere', 'standard', big())).status).toBe(404);
    await app.close();
    const down = await start({ registryDown: true });
    expect((await down.call('POST', '/echo/x', 'standard', big())).body).toBe('{"error":"registry down","status":503}');
    await down.app.close();
  });

  it('serves a session answered at once (no promise) as one answered later: bodies, denials, every step in order', async () => {
    const { call } = await start({ cachedSessions: true });
    // The first request opens the session (a promise), the following ones get it at once.
    for (let i = 0; i < 2; i++) {
      expect((await call('POST', '/echo/x', 'standard', 'abc')).body).toBe(JSON.stringify({ text: 'writer:x:3' }));
      expect((await call('POST', '/echo/x', 'standard', Readable.from(['ab', 'cd']))).body).toBe(JSON.stringify({ text: 'writer:x:4' }));
      expect((await call('GET', '/echo/x', 'standard')).status).toBe(204);
      expect((await call('POST', '/echo/x', 'standard', '01234567890')).status).toBe(413);
      expect((await call('POST', '/echo/bad', 'standard', 'a')).body).toContain('bad param');
      expect((await call('POST', '/echo/x', 'readonly', 'a')).status).toBe(403);
    }
  });

  it('counts a registry failure as a backend error of the registry', async () => {
    const { app, call, backendErrors } = await start({ registryDown: true });
    expect((await call('POST', '/echo/x', 'standard')).body).toBe('{"error":"registry down","status":503}');
    expect(backendErrors).toEqual(['/registry']);
    await app.close();
  });

  it('leaves any other error to the scope’s handler: 500 in the API’s shape, unmeasured', async () => {
    const { app, call, observed } = await start();
    const answer = await call('POST', '/echo/boom', 'standard');
    expect(answer.status).toBe(500);
    expect(JSON.parse(answer.body)).toMatchObject({ status: 500, error: expect.stringMatching(/^internal error/) });
    expect(observed).toEqual([]);
    await app.close();
  });
});
