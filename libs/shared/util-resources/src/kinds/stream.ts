// The Stream API's kind (split from kinds.ts, which exports it): StreamCluster's spec, its topics and limits.
import { z } from 'zod';
import { MESSAGE_MAX_REQUEST_BYTES, limits, withRule, withTransitionRule } from './shared';

/** A Kafka topic name as the tenant sees it (Kafka's legal characters; the broker-side prefix must still fit in 249). */
const topicName = withRule(
  z.string().min(1).max(200).regex(/^[A-Za-z0-9._-]+$/, 'must be 1–200 of A-Z a-z 0-9 . _ -'),
  { rule: "self != '.' && self != '..'", message: "must not be '.' or '..'" },
  (name) => name !== '.' && name !== '..',
);

/** At most this many topics per cluster (bounds the API server's CEL cost estimate too). */
export const MAX_TOPICS = 1000;

const topicSchema = withTransitionRule(
  z.strictObject({
    name: topicName.describe('Topic name as clients see it.'),
    partitions: z.number().int().min(1).max(1000).default(1).describe('Number of partitions; it may grow, never shrink.'),
    retentionMs: withRule(
      z.number().int().min(-1),
      { rule: 'self == -1 || self >= 60000', message: 'must be -1 (unlimited) or at least 60000' },
      (ms) => ms === -1 || ms >= 60_000,
    )
      .optional()
      .describe("Kafka's retention.ms: -1 keeps messages forever; default the broker's."),
  }),
  { rule: 'self.partitions >= oldSelf.partitions', message: 'partitions cannot be decreased' },
);

/** `StreamCluster.spec`: its topics and limits. */
export const streamClusterSpecSchema = z.strictObject({
  topics: z
    .array(topicSchema)
    .max(MAX_TOPICS)
    .superRefine((topics, ctx) => {
      // What `x-kubernetes-list-type: map` keyed by name makes the API server enforce.
      const seen = new Set<string>();
      topics.forEach((topic, i) => {
        if (seen.has(topic.name)) ctx.addIssue({ code: 'custom', path: [i, 'name'], message: `duplicate topic name '${topic.name}'` });
        seen.add(topic.name);
      });
    })
    .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'] })
    .default([])
    .describe("The cluster's topics, by name."),
  limits: limits(MESSAGE_MAX_REQUEST_BYTES),
});
export type StreamClusterSpec = z.output<typeof streamClusterSpecSchema>;
