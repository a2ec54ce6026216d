import { requestCredentials } from './credentials';

const basic = (text: string) => `Basic ${Buffer.from(text).toString('base64')}`;

describe('requestCredentials', () => {
  const kv = { scheme: 'bearer', queryToken: '_token' } as const;

  it('takes a bearer token from the header first, whatever the case of the scheme, then from the query parameter', () => {
    expect(requestCredentials('Bearer abc', '_token=q', kv)).toEqual({ token: 'abc' });
    expect(requestCredentials('bEaReR   abc  ', '', kv)).toEqual({ token: 'abc' });
    expect(requestCredentials(undefined, 'x=1&_token=q%2By', kv)).toEqual({ token: 'q+y' });
    // Another scheme, or a malformed header, leaves the query parameter.
    expect(requestCredentials(basic('u:p'), '_token=q', kv)).toEqual({ token: 'q' });
    expect(requestCredentials('Bearer a b', '_token=q', kv)).toEqual({ token: 'q' });
  });

  it('finds none in an empty token, a bare scheme, or a query parameter the API does not read', () => {
    expect(requestCredentials('Bearer ', '', kv)).toBeUndefined();
    expect(requestCredentials(undefined, '_token=', kv)).toBeUndefined();
    expect(requestCredentials(undefined, '_token=q', { scheme: 'bearer' })).toBeUndefined();
    expect(requestCredentials(undefined, 'qstash_token=q', kv)).toBeUndefined();
  });

  it('splits Basic credentials at the first colon (the password may hold colons and be empty)', () => {
    const stream = { scheme: 'basic' } as const;
    expect(requestCredentials(basic('user:pa:ss'), '', stream)).toEqual({ username: 'user', token: 'pa:ss' });
    expect(requestCredentials(basic('user:'), '', stream)).toEqual({ username: 'user', token: '' });
    expect(requestCredentials(basic('no-colon'), '', stream)).toBeUndefined();
    expect(requestCredentials('Bearer abc', '', stream)).toBeUndefined();
  });

  it('reads Basic credentials from the query only where the API allows it, and only both together', () => {
    const webhook = { scheme: 'basic', queryUser: 'user', queryPassword: 'pass' } as const;
    expect(requestCredentials(undefined, 'user=u&pass=p', webhook)).toEqual({ username: 'u', token: 'p' });
    expect(requestCredentials(undefined, 'user=u', webhook)).toBeUndefined();
    expect(requestCredentials(basic('h:x'), 'user=u&pass=p', webhook)).toEqual({ username: 'h', token: 'x' });
    expect(requestCredentials(undefined, 'user=u&pass=p', { scheme: 'basic' })).toBeUndefined();
  });
});
