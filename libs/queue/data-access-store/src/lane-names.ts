import type { QueueMessage } from '@restash/queue/util-message';

/** A lane is a user queue (`q`) or a flow-control key (`fc`). */
export type LaneKind = 'q' | 'fc';

/** A lane of a project: its kind and the user's name (queue name or flow-control key, any string). */
export interface LaneRef {
  project: string;
  kind: LaneKind;
  name: string;
}

/**
 * `text` with every character but letters, digits, `.`, `_` and `-` written as `%XX` (UTF-8 bytes): a lane's
 * queue name then has no `:` (BullMQ refuses it in queue names) and no `/` (the lane name's separator).
 */
export function escapeLanePart(text: string): string {
  return encodeURIComponent(text).replace(/[!'()*~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** The BullMQ queue name of a lane: `lane/<project>/<kind>/<name>`, project and name escaped ({@link escapeLanePart}). */
export function laneQueueName(lane: LaneRef): string {
  return `lane/${escapeLanePart(lane.project)}/${lane.kind}/${escapeLanePart(lane.name)}`;
}

/** The lane of a BullMQ queue name made by {@link laneQueueName}, or null for any other name. */
export function parseLaneQueueName(queueName: string): LaneRef | null {
  const match = /^lane\/([^/]+)\/(q|fc)\/([^/]+)$/.exec(queueName);
  if (!match) return null;
  try {
    return { project: decodeURIComponent(match[1] as string), kind: match[2] as LaneKind, name: decodeURIComponent(match[3] as string) };
  } catch {
    return null;
  }
}

/** The lane a message goes to: its queue, else its flow-control key, else none (the `deliveries` queue). A queue wins over a key. */
export function laneOf(message: Pick<QueueMessage, 'project' | 'queueName' | 'flowControl'>): LaneRef | undefined {
  if (message.queueName !== undefined) return { project: message.project, kind: 'q', name: message.queueName };
  if (message.flowControl) return { project: message.project, kind: 'fc', name: message.flowControl.key };
  return undefined;
}
