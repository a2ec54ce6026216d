import { createHash } from 'node:crypto';
import { badRequest } from './testing/bad-request';
import { parseHttpUrl, parseMethod, parsePublish, parseRetries, type PublishInput } from './publish';

const NOW = 1_700_000_000_000;

function input(headers: PublishInput['headers'] = {}, overrides: Partial<PublishInput> = {}): PublishInput {
  return {
    destination: 'https://example.com/api?x=1',
    headers,
    body: Buffer.from('hello'),
    nowMs: NOW,
    callerIp: '203.0.113.7',
    retries: { default: 3, max: 5 },
    ...overrides,
  };
}

describe('parsePublish', () => {
  it('builds a message with the defaults', () => {
    expect(parsePublish(input({ authorization: 'Bearer token', host: 'qstash.local' }))).toEqual({
      message: {
        url: 'https://example.com/api?x=1',
        method: 'POST',
        header: {},
        body: Buffer.from('hello').toString('base64'),
        maxRetries: 3,
        notBefore: NOW,
        createdAt: NOW,
        callerIp: '203.0.113.7',
      },
    });
  });

  it('keeps the destination exactly as given, and refuses what is not an absolute http(s) URL', () => {
    for (const url of ['http://localhost:3000/a//b?q=1&r=%20', 'https://example.com', 'HTTPS://Example.com/X']) {
      expect(parsePublish(input({}, { destination: url })).message.url).toBe(url);
    }
    for (const url of ['', 'example.com/api', '/relative', 'ftp://example.com/file', 'file:///etc/passwd', 'javascript:alert(1)', 'my url group', 'https://', 'http://exa mple.com']) {
      expect(badRequest(() => parsePublish(input({}, { destination: url })))).toMatch(/^invalid destination url: /);
    }
  });

  it('refuses a destination the URL parser would repair: control characters (CR, LF, TAB dropped by WHATWG), no // or no host', () => {
    for (const url of [
      'http://127.0.0.1:19400/crlf4\r\nX: y',
      'http://example.com/a\tb',
      'http://exam\nple.com/a',
      'http://example.com/\u0000',
      'http://example.com/\u007f',
      'http://example.com/\u0085',
      'http:/127.0.0.1:19400/x',
      'http:127.0.0.1:19400/x',
      'https:\\\\example.com/x',
      'http:///example.com/x',
      'http://?x',
      ' http://example.com/x',
      'http://example.com/x ',
      'http://127.0.0.1:19500\\@evil.example/x',
      'http://evil.example\\@127.0.0.1:19500/x',
      'http://example.com/a\\b',
    ]) {
      expect([url, badRequest(() => parsePublish(input({}, { destination: url })))]).toEqual([url, expect.stringMatching(/^invalid destination url: /)]);
    }
    expect(badRequest(() => parsePublish(input({}, { destination: 'http://e.com/a\r\nb' })))).toBe(
      'invalid destination url: "http://e.com/a\\r\\nb" (a URL cannot hold control characters such as CR, LF or TAB)',
    );
    expect(badRequest(() => parsePublish(input({}, { destination: 'http:/e.com/x' })))).toMatch(/followed by a host\)$/);
    // Userinfo, ports, IPv6 and non-ASCII characters stay accepted as before.
    for (const url of ['http://user:pw@example.com:8080/a', 'http://[::1]:3000/x', 'https://bücher.example/ä?q=ü']) {
      expect(parsePublish(input({}, { destination: url })).message.url).toBe(url);
    }
  });

  it('refuses callback URLs holding control characters or not starting with http(s):// and a host, naming the header', () => {
    expect(badRequest(() => parsePublish(input({ 'upstash-callback': 'http://e.com/a\tb' })))).toMatch(/^invalid Upstash-Callback: .*control characters/);
    expect(badRequest(() => parsePublish(input({ 'upstash-failure-callback': 'http:/e.com/x' })))).toMatch(/^invalid Upstash-Failure-Callback: /);
    expect(badRequest(() => parsePublish(input({ 'service-callback': 'http:e.com/x' })))).toMatch(/^invalid Service-Callback: /);
  });

  it('takes a destination of letters, digits, -, _ and . for a URL-group name', () => {
    const parsed = parsePublish(input({ 'upstash-deduplication-id': 'd1' }, { destination: 'my-group_1.v2' }));
    expect(parsed.urlGroup).toBe('my-group_1.v2');
    expect(parsed.message.url).toBe('my-group_1.v2');
    expect(parsed.deduplicationId).toBe('id:d1');
    expect(parsePublish(input({}, { destination: 'https://example.com' })).urlGroup).toBeUndefined();
  });

  it('reads Upstash-Redact-Fields: body, header, header[Name] (headers too), comma-joined, else 400', () => {
    const redact = (value: string) => parsePublish(input({ 'upstash-redact-fields': value })).message.redact;
    expect(redact('body')).toEqual({ body: true });
    expect(redact('header[authorization], Headers[X-Api-Key],body')).toEqual({ body: true, header: ['Authorization', 'X-Api-Key'] });
    expect(redact('header[A],header')).toEqual({ header: true });
    expect(redact(' , ')).toBeUndefined();
    expect(badRequest(() => redact('cookies'))).toMatch(/^invalid Upstash-Redact-Fields: "cookies"/);
    expect(badRequest(() => redact('header[]'))).toMatch(/^invalid Upstash-Redact-Fields/);
  });

  it('reads Upstash-Method in any case and refuses others', () => {
    for (const method of ['GET', 'POST', 'PUT', 'PATCH', 'DELETE']) {
      expect(parsePublish(input({ 'upstash-method': method.toLowerCase() })).message.method).toBe(method);
    }
    expect(badRequest(() => parsePublish(input({ 'upstash-method': 'HEAD' })))).toMatch(/^invalid Upstash-Method: "HEAD"/);
    expect(badRequest(() => parsePublish(input({ 'upstash-method': 'FOO' })))).toMatch(/Upstash-Method/);
  });

  it('forwards headers named like Object.prototype members as ordinary headers', () => {
    const named = parsePublish(input({ 'upstash-forward-__proto__': 'p', 'upstash-forward-constructor': 'c' })).message.header;
    expect(Object.entries(named)).toEqual([
      ['__proto__', ['p']],
      ['Constructor', ['c']],
    ]);
  });

  it('forwards Upstash-Forward-* under canonical names, plus Content-Type, and drops every other header', () => {
    const { message } = parsePublish(
      input({
        'upstash-forward-test-header': 'test-value',
        'upstash-forward-bypass-tunnel-reminder': '1',
        'upstash-forward-set-cookie': ['a=1', 'b=2'],
        'content-type': 'application/json',
        authorization: 'Bearer secret',
        host: 'localhost',
        'upstash-telemetry-sdk': 'upstash-qstash-js@2.12.0',
        'upstash-unknown': 'x',
        'x-other': 'y',
        'upstash-forward-': 'empty name',
        'upstash-forward-absent': undefined,
      }),
    );
    expect(message.header).toEqual({
      'Test-Header': ['test-value'],
      'Bypass-Tunnel-Reminder': ['1'],
      'Set-Cookie': ['a=1', 'b=2'],
      'Content-Type': ['application/json'],
    });
  });

  it('lets Content-Type win over a forwarded Content-Type, and merges names differing in case', () => {
    const { message } = parsePublish(input({ 'upstash-forward-content-type': 'text/plain', 'content-type': 'application/json', 'Upstash-Forward-X-A': '1', 'upstash-forward-x-a': '2' }));
    expect(message.header['Content-Type']).toEqual(['application/json']);
    expect(message.header['X-A']).toEqual(['1', '2']);
  });

  it('does not read callback forward headers as main forward headers', () => {
    const { message } = parsePublish(
      input({ 'upstash-callback-forward-x-cb': 'c', 'upstash-failure-callback-forward-x-fcb': 'f', 'upstash-forward-x-main': 'm' }),
    );
    expect(message.header).toEqual({ 'X-Main': ['m'] });
    expect(message.callbackSettings).toEqual({ header: { 'X-Cb': ['c'] } });
    expect(message.failureCallbackSettings).toEqual({ header: { 'X-Fcb': ['f'] } });
  });

  it('delays by Upstash-Delay', () => {
    expect(parsePublish(input({ 'upstash-delay': '10s' })).message.notBefore).toBe(NOW + 10_000);
    expect(parsePublish(input({ 'upstash-delay': '1d10h30m' })).message.notBefore).toBe(NOW + 124_200_000);
    expect(parsePublish(input({ 'upstash-delay': '0s' })).message.notBefore).toBe(NOW);
    expect(parsePublish(input({ 'upstash-delay': '1m' })).message.createdAt).toBe(NOW);
    expect(badRequest(() => parsePublish(input({ 'upstash-delay': 'abc' })))).toBe('invalid Upstash-Delay: "abc" (expected a duration such as 90s, 10m, 1d10h30m)');
    expect(badRequest(() => parsePublish(input({ 'upstash-delay': '-1s' })))).toMatch(/^invalid Upstash-Delay/);
    expect(badRequest(() => parsePublish(input({ 'upstash-delay': '400d' })))).toMatch(/longer than 365 days/);
  });

  it('takes Upstash-Not-Before (Unix seconds) over Upstash-Delay', () => {
    expect(parsePublish(input({ 'upstash-not-before': '1700000100' })).message.notBefore).toBe(1_700_000_100_000);
    expect(parsePublish(input({ 'upstash-not-before': '1700000100', 'upstash-delay': '5d' })).message.notBefore).toBe(1_700_000_100_000);
    expect(parsePublish(input({ 'upstash-not-before': '0' })).message.notBefore).toBe(0);
    for (const bad of ['-1', '1.5', 'soon', '1700000100000000']) {
      expect(badRequest(() => parsePublish(input({ 'upstash-not-before': bad })))).toMatch(/^invalid Upstash-Not-Before/);
    }
    expect(badRequest(() => parsePublish(input({ 'upstash-not-before': '1700000100', 'upstash-delay': 'x' })))).toMatch(/Upstash-Delay/);
  });

  it('reads Upstash-Retries from 0 to the maximum', () => {
    expect(parsePublish(input({ 'upstash-retries': '0' })).message.maxRetries).toBe(0);
    expect(parsePublish(input({ 'upstash-retries': '5' })).message.maxRetries).toBe(5);
    expect(parsePublish(input({}, { retries: { default: 1, max: 5 } })).message.maxRetries).toBe(1);
    for (const bad of ['6', '-1', '1.5', 'three', '1e1']) {
      expect(badRequest(() => parsePublish(input({ 'upstash-retries': bad })))).toBe(`invalid Upstash-Retries: ${JSON.stringify(bad)} (expected an integer from 0 to 5)`);
    }
  });

  it('checks and stores Upstash-Retry-Delay', () => {
    expect(parsePublish(input({ 'upstash-retry-delay': '1000 * pow(2, retried)' })).message.retryDelayExpression).toBe('1000 * pow(2, retried)');
    expect(badRequest(() => parsePublish(input({ 'upstash-retry-delay': 'process.exit()' })))).toMatch(/^invalid Upstash-Retry-Delay: "process.exit\(\)"/);
    expect(badRequest(() => parsePublish(input({ 'upstash-retry-delay': 'a=1' })))).toMatch(/^invalid Upstash-Retry-Delay: "a=1"/);
  });

  it('reads Upstash-Timeout', () => {
    expect(parsePublish(input({ 'upstash-timeout': '30s' })).message.timeoutMs).toBe(30_000);
    expect(parsePublish(input({ 'upstash-timeout': '2m' })).message.timeoutMs).toBe(120_000);
    expect(parsePublish(input({ 'upstash-timeout': '0' })).message).not.toHaveProperty('timeoutMs');
    expect(badRequest(() => parsePublish(input({ 'upstash-timeout': '30 seconds' })))).toMatch(/^invalid Upstash-Timeout/);
  });

  it('reads the callback URLs from the Upstash- or Service- headers', () => {
    const { message } = parsePublish(input({ 'upstash-callback': 'https://cb.example.com/ok', 'upstash-failure-callback': 'http://cb.example.com/failed' }));
    expect(message.callback).toBe('https://cb.example.com/ok');
    expect(message.failureCallback).toBe('http://cb.example.com/failed');
    const service = parsePublish(input({ 'service-callback': 'https://s.example.com/ok', 'service-failure-callback': 'https://s.example.com/failed' })).message;
    expect(service.callback).toBe('https://s.example.com/ok');
    expect(service.failureCallback).toBe('https://s.example.com/failed');
    expect(parsePublish(input({ 'upstash-callback': 'https://u.example.com', 'service-callback': 'https://s.example.com' })).message.callback).toBe('https://u.example.com');
    expect(message).not.toHaveProperty('callbackSettings');
    expect(message).not.toHaveProperty('failureCallbackSettings');
  });

  it('refuses callback URLs that are not absolute http(s)', () => {
    expect(badRequest(() => parsePublish(input({ 'upstash-callback': 'not a url' })))).toMatch(/^invalid Upstash-Callback: "not a url"/);
    expect(badRequest(() => parsePublish(input({ 'upstash-failure-callback': 'ftp://x.example.com' })))).toMatch(/^invalid Upstash-Failure-Callback/);
    expect(badRequest(() => parsePublish(input({ 'service-callback': '/relative' })))).toMatch(/^invalid Service-Callback/);
    expect(badRequest(() => parsePublish(input({ 'service-failure-callback': 'x' })))).toMatch(/^invalid Service-Failure-Callback/);
  });

  it('reads the callback and failure-callback settings apart', () => {
    const { message } = parsePublish(
      input({
        'upstash-callback': 'https://cb.example.com',
        'upstash-callback-method': 'put',
        'upstash-callback-timeout': '10s',
        'upstash-callback-retries': '2',
        'upstash-callback-delay': '1m',
        'upstash-callback-retry-delay': '100 * retried',
        'upstash-callback-forward-authorization': 'Bearer cb',
        'upstash-callback-unknown': 'ignored',
        'upstash-failure-callback-method': 'PATCH',
        'upstash-failure-callback-retries': '0',
        'upstash-failure-callback-forward-x-token': 'f',
      }),
    );
    expect(message.callbackSettings).toEqual({
      method: 'PUT',
      header: { Authorization: ['Bearer cb'] },
      retries: 2,
      timeoutMs: 10_000,
      retryDelayExpression: '100 * retried',
      delayMs: 60_000,
    });
    expect(message.failureCallbackSettings).toEqual({ method: 'PATCH', retries: 0, header: { 'X-Token': ['f'] } });
    expect(message.method).toBe('POST');
    expect(message.maxRetries).toBe(3);
    expect(message).not.toHaveProperty('timeoutMs');
    expect(message.notBefore).toBe(NOW);
  });

  it('refuses bad callback settings, naming the header', () => {
    expect(badRequest(() => parsePublish(input({ 'upstash-callback-method': 'TRACE' })))).toMatch(/^invalid Upstash-Callback-Method/);
    expect(badRequest(() => parsePublish(input({ 'upstash-failure-callback-method': 'TRACE' })))).toMatch(/^invalid Upstash-Failure-Callback-Method/);
    expect(badRequest(() => parsePublish(input({ 'upstash-callback-retries': '9' })))).toMatch(/^invalid Upstash-Callback-Retries/);
    expect(badRequest(() => parsePublish(input({ 'upstash-failure-callback-timeout': 'x' })))).toMatch(/^invalid Upstash-Failure-Callback-Timeout/);
    expect(badRequest(() => parsePublish(input({ 'upstash-callback-delay': 'x' })))).toMatch(/^invalid Upstash-Callback-Delay/);
    expect(badRequest(() => parsePublish(input({ 'upstash-failure-callback-retry-delay': 'a=1' })))).toMatch(/^invalid Upstash-Failure-Callback-Retry-Delay/);
  });

  it('splits Upstash-Label', () => {
    expect(parsePublish(input({ 'upstash-label': 'a, b,,c ' })).message.labels).toEqual(['a', 'b', 'c']);
    expect(parsePublish(input({ 'upstash-label': ' , ' })).message).not.toHaveProperty('labels');
  });

  it('keys deduplication by Upstash-Deduplication-Id', () => {
    expect(parsePublish(input({ 'upstash-deduplication-id': 'abc' })).deduplicationId).toBe('id:abc');
    expect(parsePublish(input({ 'upstash-deduplication-id': 'abc', 'upstash-content-based-deduplication': 'true' })).deduplicationId).toBe('id:abc');
    expect(parsePublish(input({ 'upstash-content-based-deduplication': 'false' }))).not.toHaveProperty('deduplicationId');
  });

  it('takes a run id alone as the start of a run when the publish is a trigger, and as a step otherwise', () => {
    const headers = { 'upstash-workflow-runid': 'wfr_x' };
    expect(parsePublish(input(headers, { body: Buffer.from('{"n":1}'), trigger: true })).message.workflow).toEqual({ runId: 'wfr_x', init: true });
    expect(() => parsePublish(input(headers, { body: Buffer.from('{"n":1}') }))).toThrow('invalid workflow step');
  });

  it('keys content-based deduplication by url, method, headers and body', () => {
    const dedup = (headers: PublishInput['headers'], overrides: Partial<PublishInput> = {}) =>
      parsePublish(input({ 'upstash-content-based-deduplication': 'true', ...headers }, overrides)).deduplicationId;
    const base = dedup({ 'upstash-forward-a': '1', 'upstash-forward-b': '2' });
    expect(base).toMatch(/^content:[0-9a-f]{64}$/);
    expect(dedup({ 'upstash-forward-b': '2', 'upstash-forward-a': '1', 'upstash-delay': '5s', 'upstash-retries': '1' })).toBe(base);
    expect(dedup({ 'upstash-forward-a': '1', 'upstash-forward-b': '2' }, { nowMs: NOW + 1 })).toBe(base);
    expect(dedup({ 'upstash-forward-a': '1', 'upstash-forward-b': '3' })).not.toBe(base);
    expect(dedup({ 'upstash-forward-a': '1', 'upstash-forward-b': '2', 'upstash-method': 'PUT' })).not.toBe(base);
    expect(dedup({ 'upstash-forward-a': '1', 'upstash-forward-b': '2' }, { body: Buffer.from('other') })).not.toBe(base);
    expect(dedup({ 'upstash-forward-a': '1', 'upstash-forward-b': '2' }, { destination: 'https://example.com/api?x=2' })).not.toBe(base);
    expect(parsePublish(input({ 'upstash-content-based-deduplication': 'TRUE' })).deduplicationId).toMatch(/^content:/);
  });

  it('stores any body bytes as base64', () => {
    const body = Buffer.from([0, 255, 128, 10]);
    expect(parsePublish(input({}, { body })).message.body).toBe(body.toString('base64'));
    expect(parsePublish(input({}, { body: Buffer.alloc(0) })).message.body).toBe('');
  });

  it('treats blank control headers as absent', () => {
    const { message } = parsePublish(input({ 'upstash-delay': '', 'upstash-retries': ' ', 'upstash-method': '', 'upstash-callback': '' }));
    expect(message).toMatchObject({ method: 'POST', maxRetries: 3, notBefore: NOW });
    expect(message).not.toHaveProperty('callback');
  });

  it('matches header names ignoring case', () => {
    expect(parsePublish(input({ 'Upstash-Method': 'PUT', 'Upstash-Forward-X-Y': 'z' })).message).toMatchObject({ method: 'PUT', header: { 'X-Y': ['z'] } });
  });

  it('hashes content deduplication as sha256 hex', () => {
    const id = parsePublish(input({ 'upstash-content-based-deduplication': 'true' })).deduplicationId;
    const expected = createHash('sha256')
      .update(JSON.stringify(['https://example.com/api?x=1', 'POST', [], Buffer.from('hello').toString('base64')]))
      .digest('hex');
    expect(id).toBe(`content:${expected}`);
  });
});

describe('helpers', () => {
  it('parseHttpUrl, parseMethod, parseRetries', () => {
    expect(parseHttpUrl('http://a.example/x', 'u').hostname).toBe('a.example');
    expect(badRequest(() => parseHttpUrl('mailto:x@y.z', 'Upstash-Callback'))).toMatch(/^invalid Upstash-Callback: "mailto:x@y.z"/);
    expect(parseMethod(' delete ', 'Upstash-Method')).toBe('DELETE');
    expect(parseRetries('0', 'Upstash-Retries', 0)).toBe(0);
    expect(badRequest(() => parseRetries('1', 'Upstash-Retries', 0))).toMatch(/from 0 to 0/);
  });
});
