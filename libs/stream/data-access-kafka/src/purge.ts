import { Admin } from '@platformatic/kafka';
import type { StreamClusterRecord } from '@restash/shared/data-access-registry';

/**
 * Deletes a stream cluster's data from its brokers: every topic and every consumer group whose name
 * starts with the record's prefix (the gateway names both `<prefix><tenant name>`; see
 * StreamClusterRecord.prefix). Other clusters on the same brokers are left alone. Nothing to delete is
 * not an error. Used when a tenant or one of its clusters is deleted (`tenants delete`).
 *
 * Kafka deletes only groups without members: gateways close their consumer instances when the registry
 * record goes, and the members of a gateway that died leave after their session timeout, so this waits
 * up to `groupWaitMs` for the groups to empty.
 *
 * @param record the cluster's registry record (brokers and prefix are used)
 * @param options.groupWaitMs how long to wait for groups to lose their members (default 45 s: the
 *   gateways' default session timeout, 30 s, and then some)
 * @throws Error (a @platformatic/kafka error; see kafkaErrorCode) when the brokers cannot be reached or
 *   refuse a deletion, e.g. a group that still has members after the wait (NON_EMPTY_GROUP)
 */
export async function purgeStreamCluster(record: Pick<StreamClusterRecord, 'brokers' | 'prefix'>, options: { groupWaitMs?: number } = {}): Promise<void> {
  if (record.prefix === '') throw new Error('refusing to purge a stream cluster with an empty prefix (it would delete every topic)');
  const admin = new Admin({ clientId: 'restash-purge', bootstrapBrokers: record.brokers, retries: 3, retryDelay: 250 });
  try {
    const owned = (name: string) => name.startsWith(record.prefix);
    const deadline = Date.now() + (options.groupWaitMs ?? 45_000);
    for (;;) {
      const groupIds = [...(await admin.listGroups()).keys()].filter(owned);
      if (groupIds.length === 0) break;
      const groups = await admin.describeGroups({ groups: groupIds });
      if ([...groups.values()].every((g) => g.members.size === 0) || Date.now() >= deadline) {
        await admin.deleteGroups({ groups: groupIds });
        break;
      }
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    const topics = (await admin.listTopics()).filter(owned);
    if (topics.length > 0) await admin.deleteTopics({ topics });
  } finally {
    await admin.close();
  }
}
