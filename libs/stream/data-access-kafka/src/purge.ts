import { Kafka, logLevel } from 'kafkajs';
import type { StreamClusterRecord } from '@restash/shared/data-access-registry';

/**
 * Deletes a stream cluster's data from its brokers: every topic and every consumer group whose name
 * starts with the record's prefix (the gateway names both `<prefix><tenant name>`; see
 * StreamClusterRecord.prefix). Other clusters on the same brokers are left alone. Nothing to delete is
 * not an error. Used when a tenant or one of its clusters is deleted (`tenants delete`).
 *
 * @param record the cluster's registry record (brokers and prefix are used)
 * @throws Error (a kafkajs error) when the brokers cannot be reached or refuse a deletion
 */
export async function purgeStreamCluster(record: Pick<StreamClusterRecord, 'brokers' | 'prefix'>): Promise<void> {
  if (record.prefix === '') throw new Error('refusing to purge a stream cluster with an empty prefix (it would delete every topic)');
  const kafka = new Kafka({ brokers: record.brokers, clientId: 'restash-purge', logLevel: logLevel.NOTHING, retry: { retries: 3 } });
  const admin = kafka.admin();
  await admin.connect();
  try {
    const owned = (name: string) => name.startsWith(record.prefix);
    const { groups } = await admin.listGroups();
    const groupIds = groups.map((g) => g.groupId).filter(owned);
    // A group with members cannot be deleted; the gateways close theirs when the registry record goes.
    if (groupIds.length > 0) await admin.deleteGroups(groupIds);
    const topics = (await admin.listTopics()).filter(owned);
    if (topics.length > 0) await admin.deleteTopics({ topics });
  } finally {
    await admin.disconnect();
  }
}
