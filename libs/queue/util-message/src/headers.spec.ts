import { canonicalHeaderName, headerValues, isHeaderName } from './headers';

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
