// Setup steps of bench/stream/run.sh.
//
//   node bench/stream/prepare.mjs kafka-ready   exit 0 when a kafkajs admin can describeCluster() (one try)
//   node bench/stream/prepare.mjs topics        GET /topics through the gateway (it creates the declared
//                                               topics), then checks every one on the broker and waits
//                                               for the group coordinator (__consumer_offsets)
//   node bench/stream/prepare.mjs fill N        N messages into the consume topic with kafkajs (batches of
//                                               1000, 4 in flight, acks -1); prints one JSON record
// env: see common.mjs
import { ALL_TOPICS, BATCH, PARTITIONS, brokerName, gateway, kafkajs, topicOf, value } from './common.mjs';

const [step, arg] = process.argv.slice(2);

if (step === 'kafka-ready') {
  const admin = (await kafkajs()).admin();
  try {
    await admin.connect();
    const { brokers } = await admin.describeCluster();
    if (brokers.length === 0) throw new Error('no brokers');
  } finally {
    await admin.disconnect().catch(() => undefined);
  }
} else if (step === 'topics') {
  const http = gateway(1);
  const listed = await http.get('/topics');
  await http.close();
  console.log(`GET /topics -> ${JSON.stringify(listed)}`);
  const names = ALL_TOPICS;
  const admin = (await kafkajs()).admin();
  await admin.connect();
  const { topics } = await admin.fetchTopicMetadata({ topics: names.map(brokerName) });
  // The first group request makes the broker create __consumer_offsets; wait for its coordinator here
  // rather than in the first measured join.
  for (let attempt = 1; ; attempt++) {
    try {
      await admin.fetchOffsets({ groupId: brokerName('probe'), topics: [brokerName('consume')] });
      break;
    } catch (error) {
      if (attempt >= 50) throw error;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  await admin.disconnect();
  for (const name of names) {
    const found = topics.find((t) => t.name === brokerName(name));
    if (found?.partitions.length !== PARTITIONS) throw new Error(`${brokerName(name)}: ${found?.partitions.length ?? 'no'} partitions, expected ${PARTITIONS}`);
  }
  if (Object.keys(BATCH).some((c) => listed[topicOf('gateway', c)] !== PARTITIONS)) throw new Error('the gateway does not list the topics');
} else if (step === 'fill') {
  const total = Number(arg);
  const topic = brokerName('consume');
  const { Partitioners } = await import('kafkajs');
  const p = (await kafkajs()).producer({ allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner });
  await p.connect();
  const started = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < total) {
      const from = next;
      next = Math.min(total, next + 1000);
      const messages = Array.from({ length: next - from }, (_, i) => ({ value: value(from + i) }));
      await p.send({ topic, acks: -1, messages });
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
  const seconds = (performance.now() - started) / 1000;
  await p.disconnect();
  process.stderr.write(`filled ${topic} with ${total} messages of 100 bytes in ${seconds.toFixed(1)} s\n`);
  process.stdout.write(`${JSON.stringify({ kind: 'fill', messages: total, seconds })}\n`);
} else {
  console.error('usage: prepare.mjs kafka-ready | topics | fill N');
  process.exit(2);
}
