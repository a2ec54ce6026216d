// The Queue API's kind (split from kinds.ts, which exports it): QueueProject's spec (retries, destinations, limits).
import { z } from 'zod';
import { MESSAGE_MAX_REQUEST_BYTES, limits, withRule } from './shared';
import { statusSchema } from './status';

/** `QueueProject.spec`: message retries (QStash's default is 3), destinations and limits. */
export const queueProjectSpecSchema = z.strictObject({
  retries: withRule(
    z.strictObject({
      default: z.number().int().min(0).max(100).default(3).describe('Retries of a message that sets no Upstash-Retries.'),
      max: z.number().int().min(0).max(100).default(10).describe('The most retries a message may ask for.'),
    }),
    { rule: 'self.default <= self.max', message: 'retries.default must not exceed retries.max', fieldPath: '.default' },
    (retries) => retries.default <= retries.max,
  )
    // The API server checks a default against the CEL rules as written, without its fields' own
    // defaults (`{}` fails there with "no such key: default"), so this one spells them out.
    .prefault({ default: 3, max: 10 })
    .describe('Delivery retries.'),
  destinations: z
    .strictObject({
      inNamespace: z
        .boolean()
        .default(false)
        .describe(
          "Deliver to the Services and pods of this resource's own namespace (a workflow app next to its tenant's resources), judged on the address connected to: a Service with a selector, a pod's own address; never another namespace's, the platform's, the API server or a link-local address.",
        ),
    })
    .prefault({})
    .describe('Where messages may go besides public addresses.'),
  limits: limits(MESSAGE_MAX_REQUEST_BYTES),
});
export type QueueProjectSpec = z.output<typeof queueProjectSpecSchema>;

/** `QueueProject.status`: every kind's, and the queue Redis server the project's data lives on. */
export const queueProjectStatusSchema = statusSchema.extend({
  queueServer: z
    .string()
    .optional()
    .describe("The queue Redis server its messages, schedules, DLQ and events live on (main: QUEUE_REDIS_URL's; docs/queue.md, \"Queue: several queue Redis servers\"), chosen once when it was first registered."),
});
export type QueueProjectStatus = z.output<typeof queueProjectStatusSchema>;
