import 'reflect-metadata';
import { Agent, get } from 'node:http';
import { type Socket, connect } from 'node:net';
import { Injectable, Module, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import { API_ERRORS, type ApiErrors } from './api-errors';
import { type HttpService, startHttpService } from './bootstrap';
import { ObservabilityModule } from './observability.module';
import { useRawBodies } from './raw-body';

/** A test API: errors are `{"problem": …, "code": …}`; it serves GET and POST on /known only. */
const TEST_ERRORS: ApiErrors = {
  encode: (status, message) => JSON.stringify({ problem: message, code: status }),
  methods: ['GET', 'HEAD', 'POST'],
};

@Injectable()
class TestRoutes implements OnModuleInit {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  onModuleInit(): void {
    const fastify = this.adapterHost.httpAdapter.getInstance<FastifyInstance>();
    // Registered at the root (no plugin error handler), so that the bootstrap's handlers answer.
    fastify.route({ method: ['GET', 'POST'], url: '/known', handler: async () => ({ ok: true }) });
    // Answers a little later, as a handler waiting for an engine does.
    fastify.post('/later', () => new Promise((resolve) => setTimeout(() => resolve({ ok: true }), 30)));
    fastify.get('/boom', async () => {
      throw new Error('secret internals');
    });
    // Refuses every request before reading its body, as a tenant API refuses one without credentials.
    void fastify.register(async (app) => {
      useRawBodies(app, { bodyLimitBytes: 1000, logger: { log: () => undefined, warn: () => undefined, error: () => undefined }, encode: TEST_ERRORS.encode, admitBody: () => false });
      app.post('/refused', async (_request, reply) => reply.code(401).header('content-type', 'application/json').send(TEST_ERRORS.encode(401, 'no token')));
    });
  }
}

@Module({ imports: [ObservabilityModule], providers: [TestRoutes, { provide: API_ERRORS, useValue: TEST_ERRORS }] })
class TestModule {}

/** Signals of the closing test: the held request arrived, the server started closing; and the release of that request. */
const slow = { arrived: () => undefined as void, closing: () => undefined as void, release: () => undefined as void };

@Injectable()
class SlowRoutes implements OnModuleInit {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  onModuleInit(): void {
    const fastify = this.adapterHost.httpAdapter.getInstance<FastifyInstance>();
    fastify.get('/slow', () => {
      slow.arrived();
      return new Promise((resolve) => (slow.release = () => resolve({ slow: true })));
    });
    fastify.addHook('preClose', (done) => {
      slow.closing();
      done();
    });
  }
}

@Module({ imports: [ObservabilityModule], providers: [SlowRoutes, { provide: API_ERRORS, useValue: TEST_ERRORS }] })
class SlowModule {}

/**
 * A SlowModule service that started closing while a keep-alive connection's `GET /slow` is held (slow.release()
 * answers it): the connection, what it received, when it closed, and the service's close().
 */
async function closingWhileBusy(): Promise<{ socket: Socket; chunks: Buffer[]; ended: Promise<unknown>; closed: Promise<void> }> {
  const service = await startHttpService(SlowModule, { service: 'slow', host: '127.0.0.1', port: 0, managementPort: 0, bodyLimitBytes: 1024, logLevel: 'fatal' });
  const arrived = new Promise<void>((resolve) => (slow.arrived = resolve));
  const closing = new Promise<void>((resolve) => (slow.closing = resolve));
  const socket = connect(Number(new URL(service.url).port), '127.0.0.1');
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  const ended = new Promise((resolve) => socket.on('close', resolve));
  socket.write('GET /slow HTTP/1.1\r\nHost: x\r\n\r\n');
  await arrived;
  const closed = service.close();
  await closing;
  return { socket, chunks, ended, closed };
}

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Writes raw bytes on a new connection and reads until the server closes it. */
function raw(url: string, request: string): Promise<RawResponse> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(request));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('latin1');
      const [head = '', body = ''] = text.split('\r\n\r\n', 2);
      const [statusLine = '', ...lines] = head.split('\r\n');
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body });
    });
  });
}

describe('startHttpService: every answer of the API port is in the API error shape', () => {
  let service: HttpService;

  beforeAll(async () => {
    service = await startHttpService(TestModule, {
      service: 'test',
      host: '127.0.0.1',
      port: 0,
      managementPort: 0,
      bodyLimitBytes: 1024,
      logLevel: 'fatal',
    });
  });

  afterAll(async () => {
    await service?.close();
  });

  const request = (head: string, body = '') => raw(service.url, `${head}\r\n\r\n${body}`);

  function expectApiError(response: RawResponse, status: number, message: string | RegExp): void {
    expect(response.status).toBe(status);
    expect(response.headers['content-type']).toMatch(/^application\/json/);
    const parsed = JSON.parse(response.body) as { problem: string; code: number };
    expect(parsed).toEqual({ problem: typeof message === 'string' ? message : expect.stringMatching(message), code: status });
    expect(response.body).not.toMatch(/statusCode|FST_|at .*\.js/);
  }

  it('serves the routes', async () => {
    const response = await request('GET /known HTTP/1.1\r\nHost: x\r\nConnection: close');
    expect(response.status).toBe(200);
    expect(JSON.parse(response.body)).toEqual({ ok: true });
  });

  it('answers what the HTTP parser refuses (400) and over-long headers (431), then closes the connection', async () => {
    const malformed = await request('GET /known HTTP/1.1\r\nHost: x\r\nBad Header Name: 1');
    expectApiError(malformed, 400, /^malformed HTTP request/);
    expect(malformed.headers.connection).toBe('close');
    expectApiError(await request('GARBAGE\u0001 / HTTP/1.1\r\nHost: x'), 400, /^malformed HTTP request/);
    // A HEAD request's answer has no body, though it names the length the body would have.
    const head = await request('HEAD /known HTTP/1.1\r\nHost: x\r\nBad Header Name: 1');
    expect(head.status).toBe(400);
    expect(Number(head.headers['content-length'])).toBeGreaterThan(0);
    expect(head.body).toBe('');
    const huge = await request(`GET /known HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}`);
    expectApiError(huge, 431, 'request header fields too large');
    expect(huge.headers.connection).toBe('close');
  });

  it('answers bytes after a complete request with 400 after that request’s own answer, also when it answers later', async () => {
    const { hostname, port } = new URL(service.url);
    const text = await new Promise<string>((resolve, reject) => {
      const post = 'POST /later HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}';
      const socket = connect(Number(port), hostname, () => socket.write(`${post}XYZ / HTTP/1.1\r\n\r\n`));
      const chunks: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      socket.on('error', reject);
      socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    });
    // Refused bytes inside a request still being read (a bad chunk size) are answered at once.
    expectApiError(await request('POST /known HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked', 'zz\r\n[]\r\n0\r\n\r\n'), 400, /^malformed HTTP request/);
    const answers = text.split(/(?=HTTP\/1\.1 )/);
    expect(answers.map((a) => a.slice(0, 12))).toEqual(['HTTP/1.1 200', 'HTTP/1.1 400']);
    expect(answers[0]?.split('\r\n\r\n')[1]).toBe('{"ok":true}');
    expect(JSON.parse(answers[1]?.split('\r\n\r\n')[1] ?? '')).toEqual({ problem: expect.stringMatching(/^malformed HTTP request/), code: 400 });
  });

  it('answers a request refused before its body once: a malformed body that arrives after the answer closes the connection', async () => {
    const { hostname, port } = new URL(service.url);
    const text = await new Promise<string>((resolve, reject) => {
      const socket = connect(Number(port), hostname, () => socket.write('POST /refused HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n'));
      const chunks: Buffer[] = [];
      // The body comes once the refusal is in: a bad chunk size, which the parser refuses.
      socket.once('data', () => socket.write('zz\r\n[]\r\n0\r\n\r\n'));
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      socket.on('error', reject);
      socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    });
    const answers = text.split(/(?=HTTP\/1\.1 )/);
    expect(answers).toHaveLength(1);
    expect(answers[0]).toMatch(/^HTTP\/1\.1 401 /);
    expect(answers[0]?.split('\r\n\r\n')[1]).toBe(TEST_ERRORS.encode(401, 'no token'));
  });

  it('answers methods the API does not serve with 405 and Allow, without waiting for the body, and closes the connection', async () => {
    // FROBNICATE is a well-formed method token Node's parser does not know: answered from the clientError handler.
    for (const method of ['TRACE', 'PROPFIND', 'DELETE', 'OPTIONS', 'FROBNICATE']) {
      const response = await request(`${method} /known HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100`, '{x}');
      expectApiError(response, 405, `method ${method} is not allowed: use GET, HEAD, POST`);
      expect(response.headers.allow).toBe('GET, HEAD, POST');
      expect(response.headers.connection).toBe('close');
    }
  });

  it('answers CONNECT (a proxy tunnel, which Node hands to no route) with 405 and Allow, in both target forms', async () => {
    for (const target of ['/known', '127.0.0.1:1']) {
      const response = await request(`CONNECT ${target} HTTP/1.1\r\nHost: x`);
      expectApiError(response, 405, 'method CONNECT is not allowed: use GET, HEAD, POST');
      expect(response.headers.allow).toBe('GET, HEAD, POST');
    }
  });

  it('answers a malformed URL (bad % escape) with 400 and a path no route serves with 404', async () => {
    expectApiError(await request('GET /known/%zz HTTP/1.1\r\nHost: x\r\nConnection: close'), 400, /not a valid url/);
    expectApiError(await request('GET /%E0%A4%A HTTP/1.1\r\nHost: x\r\nConnection: close'), 400, /not a valid url/);
    expectApiError(await request('POST /nowhere?a=1 HTTP/1.1\r\nHost: x\r\nConnection: close'), 404, 'not found: POST /nowhere');
  });

  it('answers Expect other than 100-continue with 417 and a request without Host with 400', async () => {
    expectApiError(await request('GET /known HTTP/1.1\r\nHost: x\r\nExpect: bogus\r\nConnection: close'), 417, /^expectation failed/);
    expectApiError(await request('GET /known HTTP/1.1\r\nConnection: close'), 400, 'bad request: the Host header is required');
    // HTTP/1.0 does not require Host.
    expect((await request('GET /known HTTP/1.0')).status).toBe(200);
  });

  it('answers a request that arrives while the server closes with 503 in the API shape', async () => {
    const { socket, chunks, ended, closed } = await closingWhileBusy();
    // A second request on the same (busy, so not closed) connection, after shutdown began.
    socket.write('GET /slow HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    slow.release();
    await ended;
    await closed;
    const [first = '', second = ''] = Buffer.concat(chunks).toString('latin1').split(/(?=HTTP\/1\.1 )/);
    expect(first).toMatch(/^HTTP\/1\.1 200 [\s\S]*\{"slow":true\}$/);
    expect(second).toMatch(/^HTTP\/1\.1 503 /);
    expect(JSON.parse(second.split('\r\n\r\n')[1] ?? '')).toEqual({ problem: 'service unavailable: the server is shutting down', code: 503 });
  });

  it('closes a keep-alive connection that was serving a request when closing began, once its answer is sent', async () => {
    const { chunks, ended, closed } = await closingWhileBusy();
    slow.release();
    // Without the sweep both would wait for the keep-alive timeout (72 s), far past this test's.
    await ended;
    await closed;
    expect(Buffer.concat(chunks).toString('latin1')).toMatch(/^HTTP\/1\.1 200 [\s\S]*\{"slow":true\}$/);
  });

  it("keeps Fastify's own 4xx status outside the API's plugins, and answers an unexpected failure 500 with the request id only", async () => {
    const body = '{"not json';
    const bad = await request(`POST /known HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close`, body);
    expectApiError(bad, 400, /JSON/);
    const boom = await request('GET /boom HTTP/1.1\r\nHost: x\r\nX-Request-Id: req-42\r\nConnection: close');
    expectApiError(boom, 500, 'internal error (request id req-42)');
    expect(boom.body).not.toContain('secret internals');
  });
});

describe('startHttpService: JSON log lines with event names', () => {
  it('logs http.listening, an unexpected failure as http.failed with its stack frames inside the JSON line, and library console output as console.output until closed', async () => {
    const written: string[] = [];
    const spies = (['stdout', 'stderr'] as const).map((stream) =>
      jest.spyOn(process[stream], 'write').mockImplementation((chunk: string | Uint8Array) => {
        written.push(String(chunk));
        return true;
      }),
    );
    const original = console.warn;
    let service: HttpService | undefined;
    try {
      service = await startHttpService(TestModule, { service: 'test', host: '127.0.0.1', port: 0, managementPort: 0, bodyLimitBytes: 1024, logLevel: 'log' });
      await raw(service.url, 'GET /boom HTTP/1.1\r\nHost: x\r\nX-Request-Id: req-43\r\nConnection: close\r\n\r\n');
      console.warn('IMPORTANT! Eviction policy is allkeys-lru. It should be "noeviction"');
    } finally {
      await service?.close();
      for (const spy of spies) spy.mockRestore();
    }
    expect(console.warn).toBe(original);
    const lines = written.join('').split('\n').filter((l) => l !== '');
    const parsed = lines.map((l) => JSON.parse(l) as { level: string; context: string; message: { event: string } });
    const port = Number(new URL(service.url).port);
    expect(parsed.find((l) => l.message.event === 'http.listening')).toMatchObject({ level: 'log', context: 'test', message: { host: '127.0.0.1', port } });
    expect(parsed.find((l) => l.message.event === 'http.failed')).toEqual({
      level: 'error',
      pid: process.pid,
      timestamp: expect.any(Number),
      context: 'test',
      message: { event: 'http.failed', request: 'req-43', method: 'GET', route: '/boom', error: { message: 'secret internals' }, frames: expect.arrayContaining([expect.stringMatching(/^at /)]) },
    });
    expect(parsed.find((l) => l.message.event === 'console.output')).toMatchObject({ level: 'warn', message: { text: 'IMPORTANT! Eviction policy is allkeys-lru. It should be "noeviction"' } });
    // Every line is one JSON object: no raw stack lines.
    expect(lines.filter((l) => !l.startsWith('{'))).toEqual([]);
  });
});

describe('GET /drain on the management port (a pod\'s preStop hook)', () => {
  it('makes every API answer close its connection and /readyz fail, answering after the seconds asked for; refuses bad seconds', async () => {
    const service = await startHttpService(TestModule, { service: 'drain', host: '127.0.0.1', port: 0, managementPort: 0, bodyLimitBytes: 1024, logLevel: 'fatal' });
    try {
      const agent = new Agent({ keepAlive: true });
      const connectionHeader = () =>
        new Promise<string | undefined>((resolve, reject) =>
          get(`${service.url}/known`, { agent }, (response) => {
            response.resume();
            response.on('end', () => resolve(response.headers.connection));
          }).on('error', reject),
        );
      expect(await connectionHeader()).toBe('keep-alive');
      expect((await fetch(`${service.managementUrl}/readyz`)).status).toBe(200);

      expect((await fetch(`${service.managementUrl}/drain?seconds=61`)).status).toBe(400);
      expect((await fetch(`${service.managementUrl}/drain?seconds=soon`)).status).toBe(400);
      const started = Date.now();
      const drained = await fetch(`${service.managementUrl}/drain?seconds=1`);
      expect(drained.status).toBe(200);
      expect(await drained.json()).toEqual({ status: 'drained', seconds: 1 });
      expect(Date.now() - started).toBeGreaterThanOrEqual(900);

      expect(await connectionHeader()).toBe('close');
      agent.destroy();
      const readyz = await fetch(`${service.managementUrl}/readyz`);
      expect(readyz.status).toBe(503);
      expect(await readyz.json()).toMatchObject({ failures: { draining: 'draining: the pod is terminating' } });
    } finally {
      await service.close();
    }
  });
});
