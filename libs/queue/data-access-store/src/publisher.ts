import { type ParsedPublish, type QueueMessage, QueueError, fanOut, newMessageId } from '@restash/queue/util-message';
import { laneOf } from './lanes';
import type { QueueStore } from './queue-store';
import type { UrlGroupStore } from './topics';

/**
 * The publishing step shared by queue-gateway (publish, batch, enqueue) and queue-worker (schedule ticks).
 *
 * API:
 * - `new Publisher(store: QueueStore, groups: UrlGroupStore)`;
 * - `publish(project, parsed: ParsedPublish[]) → Promise<Array<PublishOutcome | PublishOutcome[]>>`: one
 *   answer per parsed publish, in order: `{messageId, url, deduplicated?}` for a URL destination, an array of
 *   them (one per endpoint, in the group's order) for a URL-group destination (`parsed.urlGroup`). Every
 *   group is resolved before anything is written: an unknown group or a group without endpoints throws
 *   QueueError 400 naming the destination, and nothing of the call is published. Each message gets a new id
 *   and `project`; fields already set on `parsed.message` (queueName, scheduleId, flowControl, redact, …)
 *   are kept on every message. Store failures are thrown as they are (the caller maps them); the call's other
 *   messages may have been published.
 * - Order: the messages of a call are published together when none has a deduplication id, a queue or a
 *   flow-control key; else one after another in order (of two with the same deduplication id the earlier is
 *   kept, the later answered as a duplicate; a queue or key gets them in order).
 *
 * Fan-out (QStash's URL groups): one message per endpoint, each with its own id, retries, callbacks, events
 * and DLQ entry, `url` the endpoint's, `topicName` the group and `endpointName` the endpoint's name (when it
 * has one). Deduplication applies per endpoint message: the deduplication id gets the endpoint URL appended.
 */
export class Publisher {
  constructor(
    private readonly store: QueueStore,
    private readonly groups: UrlGroupStore,
  ) {}

  /** See the class comment. @throws QueueError 400 for an unknown or empty URL group */
  async publish(project: string, parsed: readonly ParsedPublish[]): Promise<Array<PublishOutcome | PublishOutcome[]>> {
    const planned = await this.plan(project, parsed);
    const all = planned.flatMap((item) => item.messages);
    const one = async ({ message, deduplicationId }: Planned['messages'][number]): Promise<PublishOutcome> => {
      const { messageId, deduplicated } = await this.store.publish(message, deduplicationId);
      return { messageId, url: message.url, ...(deduplicated ? { deduplicated: true as const } : {}) };
    };
    // Messages without a deduplication id, queue or flow-control key are independent: published together (a
    // batch's adds share socket writes and round trips). Otherwise one after another, so that of two with the
    // same deduplication id the earlier is kept, and a queue or key gets them in the call's order.
    let results: PublishOutcome[];
    if (all.length > 1 && all.every((m) => m.deduplicationId === undefined && !laneOf(m.message))) results = await Promise.all(all.map(one));
    else {
      results = [];
      for (const m of all) results.push(await one(m));
    }
    let next = 0;
    return planned.map((item) => {
      const mine = results.slice(next, (next += item.messages.length));
      return item.group ? mine : (mine[0] as PublishOutcome);
    });
  }

  /** The messages of each parsed publish, groups resolved. @throws QueueError 400 */
  private async plan(project: string, parsed: readonly ParsedPublish[]): Promise<Planned[]> {
    const groups = new Map<string, Awaited<ReturnType<UrlGroupStore['get']>>>();
    for (const { urlGroup } of parsed) {
      if (urlGroup === undefined || groups.has(urlGroup)) continue;
      const group = await this.groups.get(project, urlGroup);
      if (!group) throw QueueError.badRequest(`invalid destination: ${JSON.stringify(urlGroup)} is no URL and no URL group of this project`);
      if (group.endpoints.length === 0) throw QueueError.badRequest(`invalid destination: URL group ${JSON.stringify(urlGroup)} has no endpoints`);
      groups.set(urlGroup, group);
    }
    return parsed.map(({ message, deduplicationId, urlGroup }) => {
      const group = urlGroup === undefined ? undefined : groups.get(urlGroup);
      if (!group) return { messages: [{ message: { ...message, messageId: newMessageId(), project }, ...(deduplicationId ? { deduplicationId } : {}) }] };
      return {
        group: group.name,
        messages: fanOut({ ...message, messageId: '', project }, group, newMessageId).map((m) => ({
          message: m,
          ...(deduplicationId ? { deduplicationId: `${deduplicationId}|${m.url}` } : {}),
        })),
      };
    });
  }
}

/** One published message: its id (the earlier message's for a duplicate) and destination URL. */
export interface PublishOutcome {
  messageId: string;
  url: string;
  deduplicated?: true;
}

interface Planned {
  group?: string;
  messages: Array<{ message: QueueMessage; deduplicationId?: string }>;
}
