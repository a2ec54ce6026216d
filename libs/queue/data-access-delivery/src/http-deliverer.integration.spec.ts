import * as http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { type AddressAllowlist, LOOPBACK_ALLOWLIST_ENTRIES, parseAllowlist } from '@restash/shared/util-http';
import { DeliveryError, type DeliveryRequest, HttpDeliverer } from './http-deliverer';

// Every server binds to a loopback address and every request targets loopback or `localhost`:
// no test opens a connection off the machine, even when the guard under test is broken.

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  remotePort: number;
}

interface TestServer {
  port: number;
  /** `http://<host>:<port>` */
  origin: string;
  connections: number;
  requests: Seen[];
  sockets: Set<Socket>;
  close(): Promise<void>;
}

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, server: TestServer) => void;

const servers: TestServer[] = [];
const deliverers: HttpDeliverer[] = [];

async function startServer(host: string, handler: Handler): Promise<TestServer> {
  const server = http.createServer();
  const state: TestServer = {
    port: 0,
    origin: '',
    connections: 0,
    requests: [],
    sockets: new Set(),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  server.on('connection', (socket) => {
    state.connections++;
    state.sockets.add(socket);
    socket.on('close', () => state.sockets.delete(socket));
  });
  server.on('request', (req: http.IncomingMessage, res: http.ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      state.requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks), remotePort: req.socket.remotePort ?? 0 });
      handler(req, res, state);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  state.port = (server.address() as AddressInfo).port;
  state.origin = `http://${host}:${state.port}`;
  servers.push(state);
  return state;
}

function deliverer(allowlist: AddressAllowlist = parseAllowlist(LOOPBACK_ALLOWLIST_ENTRIES), maxResponseBytes = 1 << 20, maxRedirects = 5, maxSockets?: number) {
  const created = new HttpDeliverer({ allowlist, maxRedirects, maxResponseBytes, maxSockets });
  deliverers.push(created);
  return created;
}

function request(url: string, overrides: Partial<DeliveryRequest> = {}): DeliveryRequest {
  return { url, method: 'POST', headers: {}, body: Buffer.alloc(0), timeoutMs: 5_000, ...overrides };
}

async function failure(promise: Promise<unknown>): Promise<DeliveryError> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(DeliveryError);
    return error as DeliveryError;
  }
  throw new Error('delivery resolved, expected a DeliveryError');
}

afterEach(async () => {
  await Promise.all(deliverers.splice(0).map((d) => d.close()));
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

describe('HttpDeliverer (loopback servers)', () => {
  it('delivers and returns status, canonical headers and body', async () => {
    const server = await startServer('127.0.0.1', (_req, res) => {
      res.setHeader('content-type', 'text/plain');
      res.setHeader('x-multi', ['a', 'b']);
      res.writeHead(201);
      res.end('hello');
    });
    const response = await deliverer().deliver(
      request(`${server.origin}/path?q=1`, { headers: { 'Content-Type': 'application/json', 'Upstash-Message-Id': 'msg_1' }, body: Buffer.from('{"a":1}') }),
    );
    expect(response.status).toBe(201);
    expect(response.body.toString()).toBe('hello');
    expect(response.truncated).toBe(false);
    expect(response.header['Content-Type']).toEqual(['text/plain']);
    expect(response.header['X-Multi']).toEqual(['a', 'b']);
    // Made on first read, the headers copy and serialize like the other fields (callbacks and DLQ entries store them).
    expect(JSON.parse(JSON.stringify({ ...response, body: undefined })).header).toEqual(response.header);
    const [seen] = server.requests;
    expect(seen.method).toBe('POST');
    expect(seen.url).toBe('/path?q=1');
    expect(seen.body.toString()).toBe('{"a":1}');
    expect(seen.headers['content-length']).toBe('7');
    expect(seen.headers['content-type']).toBe('application/json');
    expect(seen.headers['upstash-message-id']).toBe('msg_1');
    expect(seen.headers['transfer-encoding']).toBeUndefined();
  });

  it('resolves with a 500 answer', async () => {
    const server = await startServer('127.0.0.1', (_req, res) => {
      res.writeHead(500, { 'Retry-After': '7' });
      res.end('boom');
    });
    const response = await deliverer().deliver(request(`${server.origin}/`));
    expect(response.status).toBe(500);
    expect(response.header['Retry-After']).toEqual(['7']);
    expect(response.body.toString()).toBe('boom');
  });

  it('sends GET without a body and a 3xx without Location is an answer', async () => {
    const server = await startServer('127.0.0.1', (_req, res) => {
      res.writeHead(304);
      res.end();
    });
    const response = await deliverer().deliver(request(`${server.origin}/`, { method: 'GET' }));
    expect(response.status).toBe(304);
    expect(server.requests[0].headers['content-length']).toBeUndefined();
    expect(server.requests[0].headers['transfer-encoding']).toBeUndefined();
  });

  it('refuses loopback when the allowlist is empty, without connecting', async () => {
    const server = await startServer('127.0.0.1', (_req, res) => res.end('no'));
    const error = await failure(deliverer(parseAllowlist([])).deliver(request(`${server.origin}/`)));
    expect(error.reason).toBe('refused-address');
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(server.connections).toBe(0);
  });

  it('refuses localhost (resolved by DNS lookup) when the allowlist is empty, without connecting', async () => {
    const server = await startServer('127.0.0.1', (_req, res) => res.end('no'));
    const error = await failure(deliverer(parseAllowlist([])).deliver(request(`http://localhost:${server.port}/`)));
    expect(error.reason).toBe('refused-address');
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(server.connections).toBe(0);
  });

  it('guards https destinations the same way', async () => {
    const server = await startServer('127.0.0.1', (_req, res) => res.end('no'));
    const d = deliverer(parseAllowlist([]));
    for (const url of [`https://127.0.0.1:${server.port}/`, `https://localhost:${server.port}/`]) {
      expect((await failure(d.deliver(request(url)))).reason).toBe('refused-address');
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(server.connections).toBe(0);
  });

  it('maps a TLS failure to connection', async () => {
    const server = await startServer('127.0.0.1', (_req, res) => res.end('plain http'));
    const error = await failure(deliverer().deliver(request(`https://127.0.0.1:${server.port}/`)));
    expect(error.reason).toBe('connection');
  });

  it('refusals hold no pool slot', async () => {
    const server = await startServer('127.0.0.1', (_req, res) => res.end('no'));
    const d = deliverer(parseAllowlist([]), 1024, 5, 1);
    for (const url of [server.origin, server.origin, `http://localhost:${server.port}`, `http://localhost:${server.port}`]) {
      expect((await failure(d.deliver(request(url, { timeoutMs: 1_000 })))).reason).toBe('refused-address');
    }
    expect(server.connections).toBe(0);
  });

  it('allows loopback addresses and localhost when allowlisted', async () => {
    const server = await startServer('127.0.0.1', (_req, res) => res.end('ok'));
    const d = deliverer(parseAllowlist(LOOPBACK_ALLOWLIST_ENTRIES));
    expect((await d.deliver(request(`${server.origin}/`))).status).toBe(200);
    expect((await d.deliver(request(`http://localhost:${server.port}/`))).body.toString()).toBe('ok');
  });

  it('refuses a redirect to a loopback address outside the allowlist', async () => {
    const second = await startServer('127.0.0.2', (_req, res) => res.end('second'));
    const first = await startServer('127.0.0.1', (_req, res) => {
      res.writeHead(302, { Location: `http://127.0.0.2:${second.port}/` });
      res.end();
    });
    const error = await failure(deliverer(parseAllowlist(['127.0.0.1/32'])).deliver(request(`${first.origin}/`)));
    expect(error.reason).toBe('refused-address');
    expect(first.requests).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(second.connections).toBe(0);
  });

  it('keeps method and body on 307', async () => {
    const target = await startServer('127.0.0.1', (_req, res) => res.end('moved'));
    const origin = await startServer('127.0.0.1', (_req, res) => {
      res.writeHead(307, { Location: `${target.origin}/new` });
      res.end();
    });
    const response = await deliverer().deliver(
      request(`${origin.origin}/old`, { method: 'POST', headers: { 'Content-Type': 'text/plain', Authorization: 'Bearer secret' }, body: Buffer.from('payload') }),
    );
    expect(response.body.toString()).toBe('moved');
    const [seen] = target.requests;
    expect(seen.method).toBe('POST');
    expect(seen.url).toBe('/new');
    expect(seen.body.toString()).toBe('payload');
    expect(seen.headers['content-type']).toBe('text/plain');
    // Another port is another origin.
    expect(seen.headers.authorization).toBeUndefined();
  });

  it('keeps Authorization on a same-origin redirect and resolves a relative Location', async () => {
    const server = await startServer('127.0.0.1', (req, res) => {
      if (req.url === '/a/start') {
        res.writeHead(308, { Location: 'next?x=1' });
        return res.end();
      }
      res.end('done');
    });
    await deliverer().deliver(request(`${server.origin}/a/start`, { headers: { Authorization: 'Bearer secret' }, body: Buffer.from('x') }));
    expect(server.requests.map((r) => r.url)).toEqual(['/a/start', '/a/next?x=1']);
    expect(server.requests[1].headers.authorization).toBe('Bearer secret');
    expect(server.requests[1].body.toString()).toBe('x');
  });

  it.each([303, 301, 302])('turns POST into GET without body on %s', async (status) => {
    const server = await startServer('127.0.0.1', (req, res) => {
      if (req.url === '/start') {
        res.writeHead(status, { Location: '/after' });
        return res.end('redirect body');
      }
      res.end('after');
    });
    const response = await deliverer().deliver(
      request(`${server.origin}/start`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: Buffer.from('{"a":1}') }),
    );
    expect(response.body.toString()).toBe('after');
    const seen = server.requests[1];
    expect(seen.method).toBe('GET');
    expect(seen.body.length).toBe(0);
    expect(seen.headers['content-type']).toBeUndefined();
    expect(seen.headers['content-length']).toBeUndefined();
  });

  it('fails after too many redirects', async () => {
    const server = await startServer('127.0.0.1', (_req, res) => {
      res.writeHead(302, { Location: '/again' });
      res.end();
    });
    const error = await failure(deliverer(undefined, 1024, 3).deliver(request(`${server.origin}/`)));
    expect(error.reason).toBe('too-many-redirects');
    expect(server.requests).toHaveLength(4);
  });

  it('fails on a redirect to another scheme', async () => {
    const server = await startServer('127.0.0.1', (_req, res) => {
      res.writeHead(302, { Location: 'file:///etc/passwd' });
      res.end();
    });
    expect((await failure(deliverer().deliver(request(`${server.origin}/`)))).reason).toBe('bad-redirect');
  });

  it('times out when the server never answers, and drops the connection', async () => {
    const server = await startServer('127.0.0.1', () => undefined);
    const started = Date.now();
    const error = await failure(deliverer().deliver(request(`${server.origin}/`, { timeoutMs: 200 })));
    const elapsed = Date.now() - started;
    expect(error.reason).toBe('timeout');
    expect(elapsed).toBeGreaterThanOrEqual(190);
    expect(elapsed).toBeLessThan(1_500);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(server.sockets.size).toBe(0);
  });

  it('times out while the body is still arriving', async () => {
    const server = await startServer('127.0.0.1', (_req, res) => {
      res.writeHead(200, { 'Content-Length': '10' });
      res.write('abc');
    });
    const error = await failure(deliverer().deliver(request(`${server.origin}/`, { timeoutMs: 200 })));
    expect(error.reason).toBe('timeout');
  });

  it('fails fast with connection on a closed port', async () => {
    const closed = await startServer('127.0.0.1', () => undefined);
    await closed.close();
    servers.splice(servers.indexOf(closed), 1);
    const started = Date.now();
    const error = await failure(deliverer().deliver(request(`${closed.origin}/`)));
    expect(error.reason).toBe('connection');
    expect(error.message).toContain('ECONNREFUSED');
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it('fails with connection when the server drops the connection mid-body', async () => {
    const server = await startServer('127.0.0.1', (req, res) => {
      res.writeHead(200, { 'Content-Length': '100' });
      res.write('partial', () => req.socket.destroy());
    });
    expect((await failure(deliverer().deliver(request(`${server.origin}/`)))).reason).toBe('connection');
  });

  it('truncates the body at maxResponseBytes', async () => {
    const server = await startServer('127.0.0.1', (_req, res) => res.end(Buffer.alloc(100_000, 'x')));
    const response = await deliverer(undefined, 100).deliver(request(`${server.origin}/`));
    expect(response.status).toBe(200);
    expect(response.body.length).toBe(100);
    expect(response.truncated).toBe(true);
  });

  it('does not mark a body of exactly maxResponseBytes truncated', async () => {
    const server = await startServer('127.0.0.1', (_req, res) => res.end(Buffer.alloc(100, 'x')));
    const response = await deliverer(undefined, 100).deliver(request(`${server.origin}/`));
    expect(response.body.length).toBe(100);
    expect(response.truncated).toBe(false);
  });

  it('sends a request once more on a new connection when a pooled one closes before any answer', async () => {
    const perSocket = new Map<number, number>();
    const server = await startServer('127.0.0.1', (req, res) => {
      const port = req.socket.remotePort ?? 0;
      perSocket.set(port, (perSocket.get(port) ?? 0) + 1);
      // The second request on a connection finds it closed, as when a server drops an idle keep-alive connection.
      if ((perSocket.get(port) ?? 0) > 1) return void req.socket.destroy();
      res.end('ok');
    });
    const d = deliverer();
    expect((await d.deliver(request(`${server.origin}/1`))).status).toBe(200);
    await new Promise((resolve) => setImmediate(resolve));
    const second = await d.deliver(request(`${server.origin}/2`, { body: Buffer.from('second') }));
    expect(second.body.toString()).toBe('ok');
    expect(server.connections).toBe(2);
    expect(server.requests.map((r) => r.url)).toEqual(['/1', '/2', '/2']);
  });

  it('fails with connection when a new connection closes before any answer, after one more try', async () => {
    const server = await startServer('127.0.0.1', (req) => req.socket.destroy());
    expect((await failure(deliverer().deliver(request(`${server.origin}/`)))).reason).toBe('connection');
    expect(server.requests).toHaveLength(2);
  });

  it('does not send Expect, which the client decides', async () => {
    const server = await startServer('127.0.0.1', (_req, res) => res.end('ok'));
    const response = await deliverer().deliver(request(`${server.origin}/`, { headers: { Expect: '100-continue', 'X-Kept': '1' }, body: Buffer.from('b') }));
    expect(response.status).toBe(200);
    expect(server.requests[0].headers.expect).toBeUndefined();
    expect(server.requests[0].headers['x-kept']).toBe('1');
  });

  it('reuses a keep-alive connection across deliveries', async () => {
    const server = await startServer('127.0.0.1', (_req, res) => res.end('ok'));
    const d = deliverer();
    await d.deliver(request(`${server.origin}/1`));
    // undici hands a connection back to its pool one turn of the event loop after an answer (client-h1.js: "wait
    // a full event loop cycle to reuse this socket"); a request sent before that gets a new connection.
    await new Promise((resolve) => setImmediate(resolve));
    await d.deliver(request(`${server.origin}/2`, { body: Buffer.from('second') }));
    expect(server.requests).toHaveLength(2);
    expect(server.connections).toBe(1);
    expect(server.requests[0].remotePort).toBe(server.requests[1].remotePort);
  });
});
