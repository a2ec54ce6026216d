import { Admin, ConfigResourceTypes, IncrementalAlterConfigOperationTypes } from '@platformatic/kafka';
import { kafkaErrorCode } from './errors';

/** A topic as a stream cluster declares it, with its broker-side name. */
export interface DeclaredTopic {
  /** Broker-side name (the cluster's prefix and the tenant's topic name). */
  name: string;
  partitions: number;
  /** Kafka's `retention.ms` of the topic (-1: keep forever); the broker's default when absent. */
  retentionMs?: number;
}

/** What {@link reconcileTopics} changed on the brokers (broker-side names). */
export interface TopicChanges {
  created: string[];
  grown: string[];
  deleted: string[];
}

/**
 * Makes the brokers hold exactly the declared topics among those whose name starts with `prefix` (a stream
 * cluster's: StreamClusterRecord.prefix): creates missing ones, adds partitions where fewer exist than declared
 * (Kafka cannot remove partitions: the CRD refuses a decrease), sets or clears `retention.ms`, and deletes the
 * prefixed topics no longer declared. Topics outside the prefix are never touched. Safe to run again (each step
 * is idempotent) and concurrently with the gateways' own topic creation.
 *
 * @throws Error (a @platformatic/kafka error, see kafkaErrorCode) when the brokers cannot be reached or refuse
 *   a change; also when `prefix` is empty (it would own every topic)
 */
export async function reconcileTopics(brokers: string[], prefix: string, declared: DeclaredTopic[]): Promise<TopicChanges> {
  if (prefix === '') throw new Error('refusing to reconcile topics under an empty prefix (it would own every topic)');
  const admin = new Admin({ clientId: 'restash-operator', bootstrapBrokers: brokers, retries: 3, retryDelay: 250 });
  const changes: TopicChanges = { created: [], grown: [], deleted: [] };
  try {
    const existing = new Set((await admin.listTopics()).filter((name) => name.startsWith(prefix)));
    for (const topic of declared.filter((t) => !existing.has(t.name))) {
      try {
        await admin.createTopics({
          topics: [{ topic: topic.name, partitions: topic.partitions }],
          ...(topic.retentionMs !== undefined ? { configs: [{ name: 'retention.ms', value: String(topic.retentionMs) }] } : {}),
        });
        changes.created.push(topic.name);
      } catch (error) {
        if (kafkaErrorCode(error) !== 'TOPIC_ALREADY_EXISTS') throw error; // a gateway created it first
        existing.add(topic.name);
      }
    }
    const present = declared.filter((t) => existing.has(t.name));
    if (present.length > 0) {
      const metadata = await admin.metadata({ topics: present.map((t) => t.name), forceUpdate: true });
      const grow = present.filter((t) => (metadata.topics.get(t.name)?.partitionsCount ?? Infinity) < t.partitions);
      if (grow.length > 0) {
        await admin.createPartitions({ topics: grow.map((t) => ({ name: t.name, count: t.partitions })) });
        changes.grown.push(...grow.map((t) => t.name));
      }
      await admin.incrementalAlterConfigs({
        resources: present.map((t) => ({
          resourceType: ConfigResourceTypes.TOPIC,
          resourceName: t.name,
          configs: [
            t.retentionMs !== undefined
              ? { name: 'retention.ms', configOperation: IncrementalAlterConfigOperationTypes.SET, value: String(t.retentionMs) }
              : { name: 'retention.ms', configOperation: IncrementalAlterConfigOperationTypes.DELETE },
          ],
        })),
      });
    }
    const names = new Set(declared.map((t) => t.name));
    const stale = [...existing].filter((name) => !names.has(name));
    if (stale.length > 0) {
      await admin.deleteTopics({ topics: stale });
      changes.deleted.push(...stale);
    }
    return changes;
  } finally {
    await admin.close();
  }
}
