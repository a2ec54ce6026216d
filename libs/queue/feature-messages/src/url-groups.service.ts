import { QueueError, type UrlGroup } from '@restash/queue/util-message';
import type { ProjectScope, QueueObserver, UrlGroupPort } from './ports';
import { StoreService } from './store-calls';

/**
 * The URL-group operations of the queue API (`/v2/topics`, docs/queue.md, "Queue: URL groups") over the URL-group
 * store, each scoped to the session's project. Backend failures become {@link QueueError} 503; an unknown group in a
 * path is 404.
 */
export class UrlGroupsService extends StoreService<{ groups: UrlGroupPort; observer: QueueObserver }> {
  constructor(deps: { groups: UrlGroupPort; observer: QueueObserver }) {
    super(deps, 'UrlGroupsService');
  }

  /** `POST /v2/topics/{name}/endpoints`: creates the group when absent; a repeated URL or name replaces. */
  async addEndpoints(session: ProjectScope, name: string, endpoints: Array<{ name?: string; url?: string }>): Promise<void> {
    await this.backend(session, () => this.deps.groups.addEndpoints(session.project.id, name, endpoints));
  }

  /** `DELETE /v2/topics/{name}/endpoints`. @throws QueueError 404 for an unknown group */
  async removeEndpoints(session: ProjectScope, name: string, endpoints: Array<{ name?: string; url?: string }>): Promise<void> {
    const group = await this.backend(session, () => this.deps.groups.removeEndpoints(session.project.id, name, endpoints));
    if (!group) throw new QueueError(404, `url group ${name} not found`);
  }

  /** `GET /v2/topics`: every group of the project, by name. */
  list(session: ProjectScope): Promise<UrlGroup[]> {
    return this.backend(session, () => this.deps.groups.list(session.project.id));
  }

  /** `GET /v2/topics/{name}`. @throws QueueError 404 */
  async get(session: ProjectScope, name: string): Promise<UrlGroup> {
    const group = await this.backend(session, () => this.deps.groups.get(session.project.id, name));
    if (!group) throw new QueueError(404, `url group ${name} not found`);
    return group;
  }

  /** `DELETE /v2/topics/{name}`. @throws QueueError 404 */
  async delete(session: ProjectScope, name: string): Promise<void> {
    if (!(await this.backend(session, () => this.deps.groups.delete(session.project.id, name)))) throw new QueueError(404, `url group ${name} not found`);
  }
}
