import { createHash } from 'node:crypto';
import { digestsEqual, generateToken, openWithToken, sealWithToken, tokenDigest } from './credentials';

describe('credentials', () => {
  it('generates distinct url-safe tokens', () => {
    const a = generateToken();
    expect(a).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(generateToken()).not.toEqual(a);
  });

  it('digests with SHA-256', () => {
    expect(tokenDigest('abc')).toBe(createHash('sha256').update('abc').digest('hex'));
    expect(digestsEqual(tokenDigest('abc'), tokenDigest('abc'))).toBe(true);
    expect(digestsEqual(tokenDigest('abc'), tokenDigest('abd'))).toBe(false);
    expect(digestsEqual(tokenDigest('abc'), 'ab')).toBe(false);
  });

  it('seals a secret that only the same token opens', () => {
    const token = generateToken();
    const sealed = sealWithToken(token, 'p@ss wörd');
    expect(sealed).not.toContain('p@ss');
    expect(openWithToken(token, sealed)).toBe('p@ss wörd');
    expect(() => openWithToken(generateToken(), sealed)).toThrow();
  });
});
