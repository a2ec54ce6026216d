import { createHash } from 'node:crypto';
import { digestsEqual, generateQueueToken, generateToken, queueTokenUserId, openWithToken, sealWithToken, tokenDigest } from './credentials';

describe('credentials', () => {
  it('generates distinct url-safe tokens', () => {
    const a = generateToken();
    expect(a).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(generateToken()).not.toEqual(a);
  });

  it('makes queue tokens in QStash\'s form, naming the project, and reads the project back', () => {
    const token = generateQueueToken('acme.jobs');
    const payload = JSON.parse(Buffer.from(token, 'base64').toString('utf8')) as Record<string, string>;
    expect(payload.UserID).toBe('acme.jobs');
    expect(payload.Password).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(generateQueueToken('acme.jobs')).not.toBe(token);
    expect(queueTokenUserId(token)).toBe('acme.jobs');
    expect(queueTokenUserId(generateToken())).toBeUndefined();
    expect(queueTokenUserId(Buffer.from('{"UserID":""}').toString('base64'))).toBeUndefined();
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
