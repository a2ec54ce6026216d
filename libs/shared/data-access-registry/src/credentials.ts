import { createHash, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import { aesGcmOpen, aesGcmSeal } from './sealed';

/**
 * Credentials as the registry keeps them: only SHA-256 digests of tokens (docs/architecture.md,
 * "Architecture: credentials"), and, for ACL tokens, the Redis user's password sealed with a key that
 * only the token derives.
 */

/** A new opaque token: 32 random bytes, base64url (43 characters). */
export function generateToken(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * A new token of a queue project in the form QStash's tokens take: base64 of the JSON `{"UserID": <project id>,
 * "Password": <32 random bytes, base64url>}`. `@upstash/workflow` decodes it to build webhook URLs (`getUserIdFromToken`,
 * `/v2/workflows/hooks/<UserID>/…`); the gateways treat it as opaque, as every token (tokens of another form keep working).
 */
export function generateQueueToken(projectId: string): string {
  return Buffer.from(JSON.stringify({ UserID: projectId, Password: generateToken() })).toString('base64');
}

/** The project id a queue token names (`UserID` of {@link generateQueueToken}), or undefined for a token of another form. */
export function queueTokenUserId(token: string): string | undefined {
  try {
    const payload = JSON.parse(Buffer.from(token, 'base64').toString('utf8')) as { UserID?: unknown };
    return typeof payload.UserID === 'string' && payload.UserID !== '' ? payload.UserID : undefined;
  } catch {
    return undefined;
  }
}

/** A new request-signing key of a queue project, in QStash's form: `sig_` and 28 random base58-like characters. */
export function generateSigningKey(): string {
  return `sig_${randomBytes(21).toString('base64url')}`;
}

/** SHA-256 of the token's UTF-8 bytes, lower-case hex. */
export function tokenDigest(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** Compares two hex digests in constant time (false when the lengths differ). */
export function digestsEqual(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === y.length && timingSafeEqual(x, y);
}

function sealingKey(token: string): Buffer {
  return Buffer.from(hkdfSync('sha256', Buffer.from(token, 'utf8'), Buffer.alloc(0), 'restash acl password v1', 32));
}

/**
 * Seals a secret with AES-256-GCM under a key derived (HKDF-SHA256) from the token, so that the
 * registry alone never reveals it. Output: base64url of iv(12) | tag(16) | ciphertext.
 */
export function sealWithToken(token: string, secret: string): string {
  return aesGcmSeal(sealingKey(token), secret).toString('base64url');
}

/**
 * Opens what {@link sealWithToken} sealed.
 * @throws Error when the token is not the one it was sealed with, or the data was altered
 */
export function openWithToken(token: string, sealed: string): string {
  return aesGcmOpen(sealingKey(token), Buffer.from(sealed, 'base64url'));
}
