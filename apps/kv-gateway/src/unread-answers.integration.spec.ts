import { type Socket, connect } from 'node:net';
import { call, eventually } from '@restash/shared/util-testing';
import { type KvStack, startKvStack } from './testing/kv-stack';

/**
 * A tenant whose clients ask for large answers and do not read them (docs/kv.md, "KV: limits"): the gateway
 * holds at most UNREAD_ANSWER_BYTES of one tenant's answers, so that such clients cannot exhaust the
 * memory every tenant's requests share. Here 50 MB, and answers of about 42 MB (7 MB of zero bytes, each
 * `\u0000` in JSON), far more than the loopback socket buffers take.
 */
describe('kv-gateway: answers a tenant’s clients do not read', () => {
  let stack: KvStack;
  let acme: string;
  let rival: string;
  const sockets: Socket[] = [];

  beforeAll(async () => {
    stack = await startKvStack(
      { acme: [{ name: 'main', db: 0, maxRequestBytes: 8 << 20 }], rival: [{ name: 'main', db: 1, maxRequestBytes: 8 << 20 }] },
      { UNREAD_ANSWER_BYTES: String(50 << 20) },
    );
    acme = stack.tokens('acme', 'main').standard;
    rival = stack.tokens('rival', 'main').standard;
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await stack?.stop();
  });

  /** Sends a GET on a connection of its own and reads no more than the first chunk of the answer. */
  const unreadGet = (path: string, token: string) => {
    const { hostname, port } = new URL(stack.url);
    const socket = connect(Number(port), hostname);
    socket.on('error', () => undefined);
    socket.write(`GET ${path} HTTP/1.1\r\nHost: ${hostname}\r\nAuthorization: Bearer ${token}\r\n\r\n`);
    const started = new Promise<string>((resolve) => socket.once('data', (chunk: Buffer) => resolve(chunk.toString('latin1', 0, 12))));
    void started.then(() => socket.pause());
    sockets.push(socket);
    return { socket, started };
  };

  it('denies a tenant’s answers past the limit (429) while other tenants are served, until its clients read', async () => {
    for (const token of [acme, rival]) {
      expect((await call(`${stack.url}/setrange/zeros/7000000/x`, { token })).body).toEqual({ result: 7_000_001 });
    }
    const stuck = unreadGet('/get/zeros', acme);
    // Its answer has started to arrive: it is held, and another one of acme's would pass the limit.
    expect(await stuck.started).toBe('HTTP/1.1 200');
    await eventually(async () => {
      const denied = await call(`${stack.url}/get/zeros`, { token: acme });
      expect(denied.status).toBe(429);
      expect(denied.body).toEqual({
        error: expect.stringMatching(/^ERR Too many unread answers: your clients have not yet read \d+ bytes of earlier answers \(at most 52428800\); retry later$/),
      });
    }, 10_000);
    // Small answers are not held back, and another tenant is served in full.
    expect((await call(`${stack.url}/strlen/zeros`, { token: acme })).body).toEqual({ result: 7_000_001 });
    // Read answers are released: two in a row, each alone over half the limit.
    for (let i = 0; i < 2; i++) {
      const served = await call(`${stack.url}/get/zeros`, { token: rival });
      expect(served.status).toBe(200);
      expect((served.body as { result: string }).result).toHaveLength(7_000_001);
    }
    // The client goes away: its answer is released.
    stuck.socket.destroy();
    await eventually(async () => expect((await call(`${stack.url}/get/zeros`, { token: acme })).status).toBe(200), 10_000);
  });
});
