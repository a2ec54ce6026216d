// Which direct client can read a partition from an offset WITHOUT a consumer group through its public
// API, as the REST API's /fetch needs. For each client, reads partition 0 of the
// pre-filled consume topic from offset 0 and checks that no group appeared on the broker.
//
//   node bench/stream/groupless.mjs      one JSON record per client on stdout: {tool, groupless, how}
// env: see common.mjs
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { CONFLUENT_DIR, DIRECT, brokerName, directClient, kafkajs } from './common.mjs';

const topic = brokerName('consume');
const broker = process.env.KAFKA_BROKER;

const probes = {
  /** kafkajs: consumers exist only as group members (no assign; tulios/kafkajs#373). */
  async kafkajs() {
    const kafka = await kafkajs();
    try {
      kafka.consumer({});
    } catch (error) {
      return { groupless: false, how: `no: consumer() needs a groupId (${error.message}) and has no assign(); only its internal Cluster/Broker.fetch reads without a group` };
    }
    return { groupless: false, how: 'no: a consumer without a groupId was accepted, but it has no assign()' };
  },
  /** @platformatic/kafka: Consumer.fetch({node, topics}) sends one Fetch request to a broker; no join. */
  async platformatic() {
    const { Consumer } = await import('@platformatic/kafka');
    const consumer = new Consumer({ clientId: 'restash-bench-groupless', bootstrapBrokers: [broker], groupId: brokerName('groupless-platformatic') });
    try {
      const metadata = await consumer.metadata({ topics: [topic] });
      const { id, partitions } = metadata.topics.get(topic);
      const response = await consumer.fetch({
        node: partitions[0].leader,
        maxWaitTime: 1000,
        topics: [{ topicId: id, partitions: [{ partition: 0, fetchOffset: 0n, partitionMaxBytes: 1 << 20, currentLeaderEpoch: -1, lastFetchedEpoch: -1 }] }],
      });
      const records = response.responses[0].partitions[0].records?.reduce((n, batch) => n + batch.records.length, 0) ?? 0;
      return { records, groupless: records > 0, how: 'yes: Consumer.metadata() for the leader, then Consumer.fetch({node, topics}) (one Fetch request, no group join)' };
    } finally {
      await consumer.close(true);
    }
  },
  /**
   * confluent: its node-rdkafka API's KafkaConsumer.assign() (librdkafka's manual assignment). The binding
   * wants a group.id even then; with assign() instead of subscribe() and no commit, the group never exists.
   */
  async confluent() {
    const client = await directClient('confluent');
    if (client.skip) return { groupless: undefined, how: `not measured: ${client.skip}` };
    const require = createRequire(join(CONFLUENT_DIR, 'package.json'));
    const { KafkaConsumer } = require('@confluentinc/kafka-javascript');
    const consumer = new KafkaConsumer({ 'metadata.broker.list': broker, 'group.id': brokerName('groupless-confluent'), 'enable.auto.commit': false }, {});
    await new Promise((resolve, reject) => consumer.connect({}, (error) => (error ? reject(error) : resolve())));
    try {
      consumer.assign([{ topic, partition: 0, offset: 0 }]);
      let records = 0;
      for (let attempt = 0; attempt < 20 && records === 0; attempt++) {
        records += (await new Promise((resolve, reject) => consumer.consume(1000, (error, messages) => (error ? reject(error) : resolve(messages))))).length;
      }
      return { records, groupless: records > 0, how: 'yes: the node-rdkafka API, KafkaConsumer.assign([{topic, partition, offset}]) then consume(n) (a group.id is required but never joined; its KafkaJS-compatible API has no assign)' };
    } finally {
      await new Promise((resolve) => consumer.disconnect(() => resolve()));
    }
  },
};

const admin = (await kafkajs()).admin();
await admin.connect();
const groupsBefore = new Set((await admin.listGroups()).groups.map((g) => g.groupId));
for (const tool of DIRECT) {
  let result;
  try {
    result = await probes[tool]();
  } catch (error) {
    result = { groupless: false, how: `failed: ${String(error.message ?? error).slice(0, 200)}` };
  }
  const groups = (await admin.listGroups()).groups.map((g) => g.groupId).filter((g) => !groupsBefore.has(g));
  if (groups.length > 0) result = { ...result, groupless: false, how: `${result.how}; but the broker now has the group(s) ${groups.join(', ')}` };
  process.stderr.write(`group-less read, ${tool}: ${result.how}${result.records !== undefined ? ` (${result.records} records read)` : ''}\n`);
  process.stdout.write(`${JSON.stringify({ kind: 'groupless', tool, ...result })}\n`);
}
await admin.disconnect();
process.exit(0);
