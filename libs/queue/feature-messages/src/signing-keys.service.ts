import { Logger } from '@nestjs/common';
import { logEvent } from '@restash/shared/util-http';
import { QueueError } from '@restash/queue/util-message';
import type { ProjectScope, SigningKeyRotation } from './ports';

/**
 * A queue project's request-signing keys in the registry (docs/queue.md, "Queue: signing-key rotation"): rotation
 * goes through the registry's RuntimeStore (a compare-and-set that a later apply keeps), and its announcement makes every gateway and
 * worker drop the cached record (the registry cache TTL bounds it should the announcement be lost).
 */
export class SigningKeysService {
  private readonly logger = new Logger(SigningKeysService.name);

  constructor(private readonly runtime: SigningKeyRotation) {}

  /**
   * `POST /v2/keys/rotate`: `next` becomes `current`, a new `next` is made.
   * @returns the keys after the rotation
   * @throws QueueError 404 when the project left the registry meanwhile, 503 when the registry cannot be reached
   */
  async rotate(session: ProjectScope): Promise<{ current: string; next: string }> {
    let keys: { current: string; next: string } | null;
    try {
      keys = await this.runtime.rotateQueueSigningKeys(session.project.id);
    } catch (error) {
      logEvent(this.logger, 'warn', 'engine.call-failed', { engine: 'control-redis', tenant: session.tenant, project: session.project.id, call: 'rotate-signing-keys', error });
      throw new QueueError(503, 'Service unavailable: the tenant registry cannot be reached');
    }
    if (!keys) throw new QueueError(404, `queue project ${session.project.name} not found`);
    return keys;
  }
}
