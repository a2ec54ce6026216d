import type { QueueMessage } from '../message';

/** What {@link queueMessage} gives when no field is replaced. */
const DEFAULT_MESSAGE: QueueMessage = {
  messageId: 'msg_1',
  project: 'tenant.queue',
  url: 'https://example.com/hook',
  method: 'POST',
  header: {},
  body: '',
  maxRetries: 3,
  notBefore: 1000,
  createdAt: 1000,
  callerIp: '203.0.113.7',
};

/**
 * For tests: a message (docs/queue.md, "Queue: message, DLQ entry and event shapes") of project `tenant.queue`,
 * POSTed to https://example.com/hook from 203.0.113.7 with an empty body and 3 retries, created and due at 1000;
 * `fields` replace any of these.
 */
export function queueMessage(fields: Partial<QueueMessage> = {}): QueueMessage {
  return { ...DEFAULT_MESSAGE, ...fields };
}
