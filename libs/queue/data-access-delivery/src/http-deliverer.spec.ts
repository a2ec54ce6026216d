import type { LookupAddress, LookupOptions } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { LOOPBACK_ALLOWLIST_ENTRIES, guardedLookup as sharedLookup, parseAllowlist } from '@restash/shared/util-http';
import {
  DeliveryError,
  headerMapFromRaw,
  HttpDeliverer,
  outgoingHeaders,
  redirectedRequest,
} from './http-deliverer';

describe('headerMapFromRaw', () => {
  it('groups repeated headers under canonical names in order', () => {
    expect(headerMapFromRaw(['content-type', 'text/plain', 'Set-Cookie', 'a=1', 'set-cookie', 'b=2', 'RETRY-AFTER', '5', 'x-api-KEY', 'k'])).toEqual({
      'Content-Type': ['text/plain'],
      'Set-Cookie': ['a=1', 'b=2'],
      'Retry-After': ['5'],
      'X-Api-Key': ['k'],
    });
  });

  it('gives an empty map for no headers', () => expect(headerMapFromRaw([])).toEqual({}));

  it('keeps headers named like Object.prototype members as ordinary headers (a destination chooses them)', () => {
    const map = headerMapFromRaw(['__proto__', 'a', 'constructor', 'b', '__proto__', 'c']);
    expect(Object.entries(map)).toEqual([
      ['__proto__', ['a', 'c']],
      ['Constructor', ['b']],
    ]);
  });
});

describe('outgoingHeaders', () => {
  it('drops the headers the deliverer decides and sets Content-Length from the body', () => {
    const headers = { host: 'evil', 'content-length': '999', 'Transfer-Encoding': 'chunked', Connection: 'close', 'Keep-Alive': '1', Upgrade: 'h2c', TE: 'trailers', 'X-A': 'b' };
    expect(outgoingHeaders('POST', headers, Buffer.from('hello'))).toEqual({ 'X-A': 'b', 'Content-Length': '5' });
  });

  it('sends Content-Length: 0 for an empty POST, PUT or PATCH only', () => {
    for (const method of ['POST', 'PUT', 'patch']) expect(outgoingHeaders(method, {}, Buffer.alloc(0))).toEqual({ 'Content-Length': '0' });
    for (const method of ['GET', 'DELETE', 'HEAD']) expect(outgoingHeaders(method, {}, Buffer.alloc(0))).toEqual({});
  });

  it('sets Content-Length for any method carrying a body', () => {
    expect(outgoingHeaders('DELETE', {}, Buffer.from('x'))).toEqual({ 'Content-Length': '1' });
  });
});

describe('redirectedRequest', () => {
  const from = new URL('http://a.example/one');
  const same = new URL('http://a.example/two');
  const other = new URL('https://b.example/');
  const body = Buffer.from('payload');
  const headers = { 'Content-Type': 'application/json', authorization: 'Bearer t', Cookie: 'c=1', 'X-Keep': 'yes' };

  it.each([301, 302, 303])('%s turns POST into GET without body or body headers', (status) => {
    const next = redirectedRequest(status, { method: 'POST', headers, body }, from, same);
    expect(next.method).toBe('GET');
    expect(next.body.length).toBe(0);
    expect(next.headers).toEqual({ authorization: 'Bearer t', Cookie: 'c=1', 'X-Keep': 'yes' });
  });

  it.each([301, 302, 303])('%s keeps GET and HEAD', (status) => {
    expect(redirectedRequest(status, { method: 'GET', headers: {}, body: Buffer.alloc(0) }, from, same).method).toBe('GET');
    expect(redirectedRequest(status, { method: 'HEAD', headers: {}, body: Buffer.alloc(0) }, from, same).method).toBe('HEAD');
  });

  it.each([307, 308])('%s keeps method, body and headers', (status) => {
    const next = redirectedRequest(status, { method: 'PUT', headers, body }, from, same);
    expect(next).toEqual({ method: 'PUT', headers, body });
  });

  it('drops credentials on a cross-origin hop', () => {
    const next = redirectedRequest(307, { method: 'POST', headers, body }, from, other);
    expect(next.headers).toEqual({ 'Content-Type': 'application/json', 'X-Keep': 'yes' });
  });

  it('treats another port as another origin', () => {
    const next = redirectedRequest(307, { method: 'POST', headers, body }, from, new URL('http://a.example:8080/'));
    expect(next.headers.authorization).toBeUndefined();
  });

  it('rejects a status that is not a redirect', () => {
    expect(() => redirectedRequest(304, { method: 'GET', headers: {}, body }, from, same)).toThrow(RangeError);
  });
});

describe('guardedLookup, as the deliverer refuses (DeliveryError refused-address)', () => {
  const guardedLookup = (allowlist: ReturnType<typeof parseAllowlist>, resolve: LookupFunction) =>
    sharedLookup(allowlist, (reason) => new DeliveryError('refused-address', reason), resolve);
  const fake =
    (result: string | LookupAddress[]): LookupFunction =>
    (_hostname, _options, callback) =>
      callback(null, result, typeof result === 'string' ? 4 : undefined);
  const run = (lookup: LookupFunction, options: LookupOptions) =>
    new Promise<{ error: NodeJS.ErrnoException | null; address: string | LookupAddress[] }>((resolve) =>
      lookup('example.test', options, (error, address) => resolve({ error, address })),
    );
  const none = parseAllowlist([]);

  it('passes a public single address through', async () => {
    expect(await run(guardedLookup(none, fake('93.184.215.14')), {})).toEqual({ error: null, address: '93.184.215.14' });
  });

  it('refuses a private single address', async () => {
    const { error } = await run(guardedLookup(none, fake('10.1.2.3')), {});
    expect(error).toBeInstanceOf(DeliveryError);
    expect((error as DeliveryError).reason).toBe('refused-address');
  });

  it('refuses when any address of an all:true answer is refused', async () => {
    const addresses = [
      { address: '93.184.215.14', family: 4 },
      { address: '::1', family: 6 },
    ];
    const { error, address } = await run(guardedLookup(none, fake(addresses)), { all: true });
    expect((error as DeliveryError).reason).toBe('refused-address');
    expect(address).toEqual([]);
  });

  it('lets allowlisted addresses through', async () => {
    const loopback = parseAllowlist(LOOPBACK_ALLOWLIST_ENTRIES);
    const addresses = [
      { address: '127.0.0.1', family: 4 },
      { address: '::1', family: 6 },
    ];
    expect(await run(guardedLookup(loopback, fake(addresses)), { all: true })).toEqual({ error: null, address: addresses });
  });

  it('passes DNS errors through', async () => {
    const failing: LookupFunction = (_hostname, _options, callback) => callback(Object.assign(new Error('nope'), { code: 'ENOTFOUND' }), '');
    const { error } = await run(guardedLookup(none, failing), {});
    expect(error?.code).toBe('ENOTFOUND');
  });
});

describe('HttpDeliverer', () => {
  it('refuses non-http URLs and bad timeouts without connecting', async () => {
    const deliverer = new HttpDeliverer({ allowlist: parseAllowlist([]), maxRedirects: 3, maxResponseBytes: 10 });
    const base = { method: 'GET', headers: {}, body: Buffer.alloc(0), timeoutMs: 1000 };
    await expect(deliverer.deliver({ ...base, url: 'ftp://example.test/' })).rejects.toMatchObject({ reason: 'connection' });
    await expect(deliverer.deliver({ ...base, url: 'not a url' })).rejects.toMatchObject({ reason: 'connection' });
    await expect(deliverer.deliver({ ...base, url: 'http://example.test/', timeoutMs: 0 })).rejects.toThrow(RangeError);
    await deliverer.close();
  });

  it('refuses an IP-literal loopback destination before connecting', async () => {
    const deliverer = new HttpDeliverer({ allowlist: parseAllowlist([]), maxRedirects: 3, maxResponseBytes: 10 });
    const base = { method: 'GET', headers: {}, body: Buffer.alloc(0), timeoutMs: 1000 };
    // Loopback only: should the guard fail, nothing leaves the machine.
    await expect(deliverer.deliver({ ...base, url: 'http://127.0.0.1:1/' })).rejects.toMatchObject({ reason: 'refused-address' });
    await expect(deliverer.deliver({ ...base, url: 'https://[::1]:1/' })).rejects.toMatchObject({ reason: 'refused-address' });
    await deliverer.close();
  });
});
