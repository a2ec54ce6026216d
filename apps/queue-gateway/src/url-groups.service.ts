import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { UrlGroupStore } from '@restash/queue/data-access-store';
import { QueueError, type UrlGroup } from '@restash/queue/util-message';
import { QUEUE_CONFIG, type QueueGatewayConfig } from './config';
import { QueueMetrics } from './queue-metrics';
import { QUEUE_REDIS, type Session } from './queue.service';
import { storeCall } from './store-call';

/**
 * The URL-group operations of the queue API (`/v2/topics`, docs/queue.md, "Queue: URL groups") over
 * {@link UrlGroupStore}, each scoped to the session's project. Backend failures become {@link QueueError} 503;
 * an unknown group in a path is 404.
 */
@Injectable()
export class UrlGroupsService {
  private readonly logger = new Logger(UrlGroupsService.name);
  private readonly groups: UrlGroupStore;

  constructor(
    @Inject(QUEUE_REDIS) queueRedis: Redis,
    @Inject(QUEUE_CONFIG) config: QueueGatewayConfig,
    private readonly metrics: QueueMetrics,
  ) {
    this.groups = new UrlGroupStore(queueRedis, config.store.options.prefix);
  }

  /** `POST /v2/topics/{name}/endpoints`: creates the group when absent; a repeated URL or name replaces. */
  async addEndpoints(session: Session, name: string, endpoints: Array<{ name?: string; url?: string }>): Promise<void> {
    await this.backend(session, () => this.groups.addEndpoints(session.project.id, name, endpoints));
  }

  /** `DELETE /v2/topics/{name}/endpoints`. @throws QueueError 404 for an unknown group */
  async removeEndpoints(session: Session, name: string, endpoints: Array<{ name?: string; url?: string }>): Promise<void> {
    const group = await this.backend(session, () => this.groups.removeEndpoints(session.project.id, name, endpoints));
    if (!group) throw new QueueError(404, `url group ${name} not found`);
  }

  /** `GET /v2/topics`: every group of the project, by name. */
  list(session: Session): Promise<UrlGroup[]> {
    return this.backend(session, () => this.groups.list(session.project.id));
  }

  /** `GET /v2/topics/{name}`. @throws QueueError 404 */
  async get(session: Session, name: string): Promise<UrlGroup> {
    const group = await this.backend(session, () => this.groups.get(session.project.id, name));
    if (!group) throw new QueueError(404, `url group ${name} not found`);
    return group;
  }

  /** `DELETE /v2/topics/{name}`. @throws QueueError 404 */
  async delete(session: Session, name: string): Promise<void> {
    if (!(await this.backend(session, () => this.groups.delete(session.project.id, name)))) throw new QueueError(404, `url group ${name} not found`);
  }

  private backend<T>(session: Session, call: () => Promise<T>): Promise<T> {
    return storeCall(this.metrics, this.logger, session.tenant, call);
  }
}
