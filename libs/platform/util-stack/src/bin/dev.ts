// `make dev`: the whole local stack in the foreground, from the build (`make dev` builds first).
//
//   node -r @swc-node/register libs/platform/util-stack/src/bin/dev.ts
//
// Starts the control Redis (registry, quotas and, with AOF and noeviction as BullMQ needs, the
// queue's jobs), one Redis server per KV database of deploy/local/tenants.yaml (a Redis server backs
// at most one KV database: Redis does not isolate logical databases; each in
// .restash/kv/<tenant>.<database>/, with AOF and the gateway's ACL user; Redis 8.2 with RedisJSON and
// RediSearch, or with KV_ENGINE=valkey Valkey 9.1 in .restash/kv-valkey/), qdrant-local, embedder-local
// and a Kafka broker; applies deploy/local/tenants.yaml with the tenants command; starts kv-gateway,
// vector-gateway, stream-gateway, queue-gateway and queue-worker; lists the demo topics (the gateway
// creates a cluster's declared topics on first use); and writes .restash/local.env with the variables
// the official Upstash SDKs read. Ctrl-C or SIGTERM stops everything it started; running it again
// reuses the tokens and the data. Ports: DEV_PORTS (ports.ts), each moved by its variable.
import { existsSync } from 'node:fs';
import { rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { answers200 } from '../process';
import { repoRoot } from '../paths';
import { DEV_PORTS, devPorts } from '../ports';
import { startStack } from '../stack';

const say = (text: string) => process.stdout.write(`${text}\n`);

/** The KV databases of deploy/local/tenants.yaml, one Redis server each: keep in step with the file. */
const KV_DATABASES = [{ id: 'demo.main', portName: 'dataRedis' as const }];

async function main(): Promise<void> {
  const root = repoRoot();
  const state = join(root, '.restash');
  const ports = devPorts();
  // Before one server per database, demo.main lived in .restash/data: keep its data.
  if (existsSync(join(state, 'data')) && !existsSync(join(state, 'kv/demo.main'))) {
    await rename(join(state, 'data'), join(state, 'kv/demo.main'));
  }

  say('starting the local stack (logs in .restash/logs/)');
  const stack = await startStack({
    stateDir: state,
    persistent: true,
    from: 'dist',
    ports,
    kvDatabases: KV_DATABASES.map(({ id, portName }) => ({ id, port: ports[portName], variable: DEV_PORTS[portName].variable })),
    qdrant: true,
    embedder: true,
    kafka: true,
    tenants: join(root, 'deploy/local/tenants.yaml'),
    apps: ['kv-gateway', 'vector-gateway', 'stream-gateway', 'queue-gateway', 'queue-worker'],
  });
  let stopping: Promise<void> | undefined;
  const stop = (code: number) => {
    stopping ??= (async () => {
      say('\nstopping the local stack');
      await stack.stop();
      process.exit(code);
    })();
  };
  process.on('SIGINT', () => stop(0));
  process.on('SIGTERM', () => stop(0));
  process.stdout.write(stack.applied);

  const demo = stack.tokens('demo');
  const url = (port: number) => `http://127.0.0.1:${port}`;
  const kv = url(ports.kv);
  const controlUrl = stack.control.url;
  await writeFile(
    join(state, 'local.env'),
    `# Written by make dev: \`source .restash/local.env\`, then any Upstash SDK program talks to the local stack.
# What bin/tenants (apply, delete) needs from another shell: the registry, the key of its sealed secrets,
# the queue's Redis, the engines a resources file puts resources on and the \${NAME}s of deploy/local/tenants.yaml:
export CONTROL_REDIS_URL=${controlUrl}
export REGISTRY_SEAL_KEY=${stack.registrySealKey}
export QUEUE_REDIS_URL=${(stack.queueRedis ?? stack.control).url}
${Object.entries(stack.tenantEnv)
  .map(([name, value]) => `export ${name}=${value}`)
  .join('\n')}
export UPSTASH_REDIS_REST_URL=${kv}
export UPSTASH_REDIS_REST_TOKEN=${demo.kv.main?.standard}
export UPSTASH_REDIS_REST_READONLY_TOKEN=${demo.kv.main?.readonly}
export UPSTASH_VECTOR_REST_URL=${url(ports.vector)}
export UPSTASH_VECTOR_REST_TOKEN=${demo.vector.docs?.standard}
export UPSTASH_VECTOR_REST_READONLY_TOKEN=${demo.vector.docs?.readonly}
export UPSTASH_KAFKA_REST_URL=${url(ports.stream)}
export UPSTASH_KAFKA_REST_USERNAME=demo.events
export UPSTASH_KAFKA_REST_PASSWORD=${demo.stream.events?.standard}
export QSTASH_URL=${url(ports.queue)}
export QSTASH_TOKEN=${demo.queue.main?.standard}
export QSTASH_CURRENT_SIGNING_KEY=${demo.queue.main?.currentSigningKey}
export QSTASH_NEXT_SIGNING_KEY=${demo.queue.main?.nextSigningKey}
`,
    { mode: 0o600 },
  );

  // The gateway creates a cluster's declared topics on first use: list them once so they exist now
  // (this waits for the broker, which takes a few seconds to elect itself on a first start).
  const basic = `Basic ${Buffer.from(`demo.events:${demo.stream.events?.standard}`).toString('base64')}`;
  const deadline = Date.now() + 30_000;
  while (!(await answers200(ports.stream, '/topics', { authorization: basic }))) {
    if (Date.now() > deadline) {
      process.stderr.write('the Kafka broker and the demo topics did not come up; see .restash/logs/\n');
      stop(1);
      return;
    }
    await new Promise((r) => setTimeout(r, 100));
  }

  say(`
restash local stack is up (logs in .restash/logs/; metrics on :${ports.kvManagement}, :${ports.vectorManagement}, :${ports.streamManagement}, :${ports.queueManagement} and :${ports.queueWorkerManagement} /metrics)
  KV REST API       ${kv}   (tenant demo, database main: ${stack.kvEngine.name === 'redis' ? 'Redis' : 'Valkey'} ${stack.kvEngine.version}${stack.kvEngine.modules ? ' with RedisJSON and RediSearch' : ''})
  Vector REST API   ${url(ports.vector)}   (tenant demo, index docs: 384 dimensions, COSINE, local MiniLM model)
  Stream REST API   ${url(ports.stream)}   (tenant demo, cluster events: topics orders (3 partitions) and webhooks; Kafka on :${ports.kafka})
  Queue API (QStash) ${url(ports.queue)}   (tenant demo, project main; queue-worker delivers, loopback destinations allowed)

  source .restash/local.env
  node -e "const {Redis}=require('@upstash/redis'); const r=Redis.fromEnv(); r.set('hello','world').then(()=>r.get('hello')).then(console.log)"
  node -e "const {Index}=require('@upstash/vector'); const i=Index.fromEnv(); i.upsert({id:'1',data:'a cat on a mat'}).then(()=>i.query({data:'kitten',topK:1})).then(console.log)"
  node -e "const {Kafka}=require('@upstash/kafka'); const e=process.env; const k=new Kafka({url:e.UPSTASH_KAFKA_REST_URL,username:e.UPSTASH_KAFKA_REST_USERNAME,password:e.UPSTASH_KAFKA_REST_PASSWORD}); k.producer().produce('orders','hello').then(console.log)"
  node -e "const {Client}=require('@upstash/qstash'); const e=process.env; new Client({baseUrl:e.QSTASH_URL,token:e.QSTASH_TOKEN}).publishJSON({url:e.UPSTASH_REDIS_REST_URL,headers:{Authorization:'Bearer '+e.UPSTASH_REDIS_REST_TOKEN},body:['SET','from-queue','delivered']}).then(console.log)"

Ctrl-C stops everything.`);

  // Stay in the foreground until a process dies or we are told to stop.
  const exit = await stack.firstExit();
  process.stderr.write(`${exit.name} stopped (${exit.status}); see .restash/logs/${exit.name}.log\n`);
  stop(1);
}

/** Stops on a failed start too: startStack has stopped what it started. */
main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
