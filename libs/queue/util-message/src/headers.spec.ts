import { canonicalHeaderName, headerValues, headersFromJson, isHeaderName } from './headers';

describe('canonicalHeaderName', () => {
  it.each([
    ['test-header', 'Test-Header'],
    ['content-type', 'Content-Type'],
    ['CONTENT-TYPE', 'Content-Type'],
    ['x-forwarded-for', 'X-Forwarded-For'],
    ['bypass-tunnel-reminder', 'Bypass-Tunnel-Reminder'],
    ['www-authenticate', 'Www-Authenticate'],
    ['a', 'A'],
    ['x--y', 'X--Y'],
    ['-x', '-X'],
    ['x_y', 'X_y'],
    ['2fa-code', '2fa-Code'],
  ])('%s → %s', (name, canonical) => {
    expect(canonicalHeaderName(name)).toBe(canonical);
  });

  it('leaves names that are not tokens unchanged, like Go', () => {
    expect(canonicalHeaderName('bad header')).toBe('bad header');
    expect(canonicalHeaderName('')).toBe('');
    expect(canonicalHeaderName('ünï-code')).toBe('ünï-code');
    expect(isHeaderName('x-ok')).toBe(true);
    expect(isHeaderName('x ok')).toBe(false);
  });
});

describe('headerValues', () => {
  it('lists the values of a Node header', () => {
    expect(headerValues(undefined)).toEqual([]);
    expect(headerValues('a, b')).toEqual(['a, b']);
    expect(headerValues('')).toEqual(['']);
    const values = ['a', 'b'];
    expect(headerValues(values)).toEqual(['a', 'b']);
    expect(headerValues(values)).not.toBe(values);
  });
});

describe('headersFromJson', () => {
  it('keeps a header named __proto__ as an ordinary header', () => {
    expect(Object.entries(headersFromJson(JSON.parse('{"__proto__": "x", "Constructor": "y"}'), 'batch item 0'))).toEqual([
      ['__proto__', 'x'],
      ['constructor', 'y'],
    ]);
  });

  it('gives the headers by lower-case name', () => {
    expect(headersFromJson({ 'Upstash-Forward-X': 'a b', 'Content-Type': 'text/plain; charset=é' }, 'batch item 0')).toEqual({
      'upstash-forward-x': 'a b',
      'content-type': 'text/plain; charset=é',
    });
  });

  it.each([
    ['a name with a space', { 'Upstash-Forward-Bad Name': 'x' }, /batch item 1: "Upstash-Forward-Bad Name" is not a valid header name/],
    ['an empty name', { '': 'x' }, /is not a valid header name/],
    ['a name with a lone surrogate', { 'Upstash-Forward-\ud800': 'x' }, /is not a valid header name/],
    ['a value with CR LF', { 'Upstash-Forward-X': 'a\r\nInjected: 1' }, /the value of header Upstash-Forward-X holds a character HTTP does not allow/],
    ['a value with NUL', { 'Upstash-Forward-X': 'a\u0000b' }, /holds a character HTTP does not allow/],
    ['a value with a lone surrogate', { 'Upstash-Forward-X': '\ud800' }, /holds a character HTTP does not allow/],
    ['a value that is not a string', { 'Upstash-Forward-X': 1 }, /headers must map names to strings/],
    ['an array', ['x'], /headers must map names to strings/],
  ])('refuses %s with a 400 naming the item', (_what, headers, message) => {
    expect(() => headersFromJson(headers, 'batch item 1')).toThrow(expect.objectContaining({ status: 400, message: expect.stringMatching(message) }));
  });
});
