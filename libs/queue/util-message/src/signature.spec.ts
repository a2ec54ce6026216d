import { createHash } from 'node:crypto';
import { Receiver } from '@upstash/qstash';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { signRequest } from './signature';

const CURRENT = 'sig_7kYjw48mhY7kAjqNGcy6cr29RJ6r';
const NEXT = 'sig_5ZB6DVzB1wjE8S6rZ7eenA8Pdnhs';
const URL = 'https://example.com/api?x=1';
const BODY = '{"hello":"world"}';

const nowSec = () => Math.floor(Date.now() / 1000);
const receiver = new Receiver({ currentSigningKey: CURRENT, nextSigningKey: NEXT });

describe('signRequest', () => {
  it('makes the JWT QStash documents', async () => {
    const signature = await signRequest({ signingKey: CURRENT, url: URL, body: Buffer.from(BODY), nowSec: 1_700_000_000 });
    expect(decodeProtectedHeader(signature)).toEqual({ alg: 'HS256', typ: 'JWT' });
    const claims = decodeJwt(signature);
    expect(claims).toEqual({
      iss: 'Upstash',
      sub: URL,
      iat: 1_700_000_000,
      nbf: 1_700_000_000,
      exp: 1_700_000_300,
      jti: expect.stringMatching(/^jwt_[0-9a-f]{32}$/),
      body: createHash('sha256').update(BODY).digest('base64url'),
    });
    expect(claims.body).not.toMatch(/=/);
    const again = await signRequest({ signingKey: CURRENT, url: URL, body: Buffer.from(BODY), nowSec: 1_700_000_000 });
    expect(decodeJwt(again).jti).not.toBe(claims.jti);
  });

  it('is accepted by the official Receiver with the current key', async () => {
    const signature = await signRequest({ signingKey: CURRENT, url: URL, body: Buffer.from(BODY), nowSec: nowSec() });
    await expect(receiver.verify({ signature, body: BODY, url: URL })).resolves.toBe(true);
    await expect(receiver.verify({ signature, body: BODY })).resolves.toBe(true);
  });

  it('is accepted by the official Receiver when signed with the next key', async () => {
    const signature = await signRequest({ signingKey: NEXT, url: URL, body: Buffer.from(BODY), nowSec: nowSec() });
    await expect(receiver.verify({ signature, body: BODY, url: URL })).resolves.toBe(true);
  });

  it('signs an empty body', async () => {
    const signature = await signRequest({ signingKey: CURRENT, url: URL, body: Buffer.alloc(0), nowSec: nowSec() });
    await expect(receiver.verify({ signature, body: '', url: URL })).resolves.toBe(true);
  });

  it('is rejected for a tampered body, another URL, another key, or when expired', async () => {
    const signature = await signRequest({ signingKey: CURRENT, url: URL, body: Buffer.from(BODY), nowSec: nowSec() });
    await expect(receiver.verify({ signature, body: '{"hello":"World"}', url: URL })).rejects.toThrow(/body hash does not match/);
    await expect(receiver.verify({ signature, body: BODY, url: 'https://example.com/api?x=2' })).rejects.toThrow(/invalid subject/);
    const other = await signRequest({ signingKey: 'sig_someOtherKey', url: URL, body: Buffer.from(BODY), nowSec: nowSec() });
    await expect(receiver.verify({ signature: other, body: BODY, url: URL })).rejects.toThrow(/signature verification failed/);
    const expired = await signRequest({ signingKey: CURRENT, url: URL, body: Buffer.from(BODY), nowSec: nowSec() - 600 });
    await expect(receiver.verify({ signature: expired, body: BODY, url: URL })).rejects.toThrow(); // the current key says "exp" claim failed, then the next key fails the signature
  });
});
