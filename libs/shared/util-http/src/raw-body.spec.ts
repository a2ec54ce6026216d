import Fastify, { type FastifyInstance } from 'fastify';
import { rawBodyHook } from './raw-body';

describe('rawBodyHook', () => {
  let app: FastifyInstance;
  let url: string;

  beforeAll(async () => {
    app = Fastify();
    app.addHook('onRequest', rawBodyHook(16));
    app.setErrorHandler((error: Error & { statusCode?: number }, _request, reply) => reply.code(error.statusCode ?? 500).send({ error: error.message }));
    const echo = async (request: { body: unknown }) => ({
      isBuffer: Buffer.isBuffer(request.body),
      hex: Buffer.isBuffer(request.body) ? request.body.toString('hex') : null,
    });
    app.post('/', echo);
    app.get('/', echo);
    url = await app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(() => app.close());

  it('hands over the exact bytes of any content type, and skips Fastify’s parsers', async () => {
    for (const type of ['application/json', 'text/plain', 'application/x-www-form-urlencoded', 'image/png']) {
      const response = await fetch(url, { method: 'POST', headers: { 'content-type': type }, body: Buffer.from([0xff, 0x00, 0x7b]) });
      expect(await response.json()).toEqual({ isBuffer: true, hex: 'ff007b' });
    }
  });

  it('reads chunked bodies too', async () => {
    const body = new ReadableStream({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('ab'));
        controller.enqueue(new TextEncoder().encode('cd'));
        controller.close();
      },
    });
    const response = await fetch(url, { method: 'POST', body, duplex: 'half' } as RequestInit);
    expect(await response.json()).toEqual({ isBuffer: true, hex: Buffer.from('abcd').toString('hex') });
  });

  it('answers 413 past the limit, declared or streamed', async () => {
    const declared = await fetch(url, { method: 'POST', body: 'x'.repeat(17) });
    expect(declared.status).toBe(413);
    const streamed = new ReadableStream({
      start(controller) {
        for (let i = 0; i < 5; i++) controller.enqueue(new TextEncoder().encode('xxxx'));
        controller.close();
      },
    });
    const response = await fetch(url, { method: 'POST', body: streamed, duplex: 'half' } as RequestInit);
    expect(response.status).toBe(413);
    expect(await response.json()).toEqual({ error: 'request body is larger than 16 bytes' });
  });

  it('leaves requests without a body alone', async () => {
    expect(await (await fetch(url)).json()).toEqual({ isBuffer: false, hex: null });
  });
});

describe('rawBodyHook with admit', () => {
  it('reads no byte of a body that admit refuses (or fails on): the route runs without one (no 413), and Fastify reads none either (no content type left)', async () => {
    const app = Fastify();
    app.addHook('onRequest', rawBodyHook(16, undefined, async (request) => {
      if (request.headers['x-admit'] === 'fail') throw new Error('registry down');
      return request.headers['x-admit'] === 'yes';
    }));
    app.post('/', async (request) => {
      return { body: Buffer.isBuffer(request.body) ? request.body.toString() : null };
    });
    const url = await app.listen({ port: 0, host: '127.0.0.1' });
    try {
      // Chunked: no declared length, which the hook refuses up front when it is over the limit.
      const post = (admit: string, text: string) => {
        const body = new ReadableStream({
          start(controller) {
            controller.enqueue(new TextEncoder().encode(text));
            controller.close();
          },
        });
        return fetch(url, { method: 'POST', headers: { 'x-admit': admit, 'content-type': 'text/plain' }, body, duplex: 'half' } as RequestInit).then((r) => r.json());
      };
      expect(await post('yes', 'abc')).toEqual({ body: 'abc' });
      for (const admit of ['no', 'fail']) {
        // Over the limit, yet no 413: nothing was read (Node discards the body once the answer is sent).
        expect(await post(admit, 'x'.repeat(100))).toEqual({ body: null });
      }
    } finally {
      await app.close();
    }
  });
});
