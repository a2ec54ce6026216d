import { createHash, randomBytes } from 'node:crypto';
import { SignJWT } from 'jose';

/** A signature is valid this long after it is made, in seconds (QStash's 5 minutes). */
export const SIGNATURE_TTL_SEC = 300;

/**
 * The `Upstash-Signature` JWT of a delivery (upstash-compat.md §4.5; qstash/features/security.mdx):
 * HS256 keyed with the UTF-8 bytes of `signingKey`, header `{"alg":"HS256","typ":"JWT"}`, claims
 * `iss: "Upstash"`, `sub: url`, `iat = nbf = nowSec`, `exp = nowSec + 300`, `jti: "jwt_<32 hex>"` and
 * `body`: base64url(SHA-256(body)) without padding. `@upstash/qstash`'s `Receiver.verify` accepts it.
 * @param args.url the destination exactly as it will be requested (the Receiver compares `sub` to it)
 * @param args.body the bytes that will be sent
 * @param args.nowSec the current time, Unix seconds
 * @returns the compact JWT
 */
export async function signRequest(args: { signingKey: string; url: string; body: Buffer; nowSec: number }): Promise<string> {
  const bodyHash = createHash('sha256').update(args.body).digest('base64url');
  return new SignJWT({ body: bodyHash })
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuer('Upstash')
    .setSubject(args.url)
    .setIssuedAt(args.nowSec)
    .setNotBefore(args.nowSec)
    .setExpirationTime(args.nowSec + SIGNATURE_TTL_SEC)
    .setJti(`jwt_${randomBytes(16).toString('hex')}`)
    .sign(new TextEncoder().encode(args.signingKey));
}
