import type { SigningKeysService } from '@restash/queue/feature-messages';
import { type Endpoint, at, ok } from './endpoint';

/** `POST /v2/keys/rotate` (`@upstash/qstash`'s signing keys; QStash's API answers `{current, next}`). Read-only tokens get 403. */
export function keyEndpoints(s: SigningKeysService): Endpoint[] {
  return [{ method: 'POST', route: at('keys/rotate'), write: true, name: 'keys', run: async (c) => ok(await s.rotate(c.session)) }];
}
