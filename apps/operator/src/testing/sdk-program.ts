/**
 * A few lines of each official SDK, configured only from the environment, as an application is whose pod has
 * `envFrom: [{ secretRef: { name: <resource> } }]` (the e2e test runs it with exactly a resource's Secret as
 * its environment). Prints one JSON line with what it read back; exits 1 with the error otherwise.
 *
 * usage: sdk-program <kv|vector|stream|queue> <marker> [queue destination URL]
 */
import { Kafka } from '@upstash/kafka';
import { Client } from '@upstash/qstash';
import { Redis } from '@upstash/redis';
import { Index } from '@upstash/vector';

async function run(api: string, marker: string, destination: string | undefined): Promise<unknown> {
  const env = process.env;
  switch (api) {
    case 'kv': {
      const redis = Redis.fromEnv();
      await redis.set(`greeting:${marker}`, marker);
      return { value: await redis.get(`greeting:${marker}`), keys: await redis.keys('greeting:*') };
    }
    case 'vector': {
      const index = Index.fromEnv();
      await index.upsert({ id: marker, data: `a document about ${marker}` });
      const hits = await index.query({ data: `about ${marker}`, topK: 5 });
      return { ids: hits.map((h) => h.id), info: (await index.info()).dimension };
    }
    case 'stream': {
      const kafka = new Kafka({ url: env['UPSTASH_KAFKA_REST_URL'] ?? '', username: env['UPSTASH_KAFKA_REST_USERNAME'] ?? '', password: env['UPSTASH_KAFKA_REST_PASSWORD'] ?? '' });
      const produced = await kafka.producer().produce('orders', marker, { partition: 0 });
      const fetched = await kafka.consumer().fetch({ topic: 'orders', partition: 0, offset: produced.offset });
      return { values: fetched.map((m) => m.value), topics: (await kafka.admin().topics()) };
    }
    case 'queue': {
      const client = new Client({ baseUrl: env['QSTASH_URL'] ?? '', token: env['QSTASH_TOKEN'] ?? '' });
      const { messageId } = await client.publishJSON({ url: destination ?? '', body: { marker } });
      return { messageId };
    }
    default:
      throw new Error(`unknown API ${api}`);
  }
}

const [api = '', marker = '', destination] = process.argv.slice(2);
run(api, marker, destination).then(
  (result) => process.stdout.write(`${JSON.stringify(result)}\n`),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
