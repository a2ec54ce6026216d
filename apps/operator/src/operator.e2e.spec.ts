import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { type IncomingMessage, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { Receiver } from '@upstash/qstash';
import { Redis as IORedis } from 'ioredis';
import { Kafka, logLevel } from 'kafkajs';
import { type AppProcess, type Cluster, type Stack, freePorts, repoRoot, sourceEnv, startApp, startCluster, startS3Server, startStack } from '@restash/platform/util-stack';
import { eventually } from '@restash/shared/util-testing';

/**
 * Issue 13's end-to-end test, on the real single-node cluster (deploy/k8s/cluster.sh) with the local stack's
 * engines and gateways and two operator replicas as processes: the CRDs, the example resources in two
 * namespaces, the official SDKs configured from the Secrets only, isolation between the namespaces, spec
 * changes, bad specs, deletion of everything a resource created, SIGKILL of the leader mid-reconcile, and leader
 * election.
 */
const KINDS = 'kvdatabases,vectorindexes,streamclusters,queueprojects';
const EXAMPLES = join(repoRoot(), 'deploy/examples');

let cluster: Cluster;
let stack: Stack;
let operators: AppProcess[] = [];
let control: IORedis;
let kafka: Kafka;
let sink: Server;
const received: Array<{ body: string; signature: string; url: string }> = [];

const kubectl = async (...args: string[]) => (await cluster.kubectl(args)).trim();
const apply = (yaml: string, namespace: string) => cluster.kubectl(['apply', '-n', namespace, '-f', '-'], yaml);

/** Resolves with what `probe` gives once it is neither undefined nor false (util-testing's `eventually`, polling every 500 ms). */
function waitFor<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 120_000): Promise<T> {
  return eventually(async () => {
    const value = await probe();
    if (value === undefined || value === false) throw new Error(`timed out waiting for ${what}`);
    return value;
  }, timeoutMs, 500);
}

interface Item {
  kind: string;
  metadata: { name: string; namespace: string; generation: number };
  status?: { observedGeneration?: number; secretName?: string; queueServer?: string; conditions?: Array<{ type: string; status: string; reason: string; message: string }> };
}

async function resources(namespace: string): Promise<Item[]> {
  return (JSON.parse(await kubectl('get', KINDS, '-n', namespace, '-o', 'json')) as { items: Item[] }).items;
}

const ready = (item: Item) => item.status?.conditions?.find((c) => c.type === 'Ready');

/** Resolves when the namespace holds `count` resources, each Ready for its current generation. */
async function allReady(namespace: string, count: number, timeoutMs = 120_000): Promise<Item[]> {
  return waitFor(
    `${count} Ready resources in ${namespace}`,
    async () => {
      const items = await resources(namespace);
      return items.length === count && items.every((i) => ready(i)?.status === 'True' && i.status?.observedGeneration === i.metadata.generation) && items;
    },
    timeoutMs,
  );
}

async function secretOf(namespace: string, name: string): Promise<Record<string, string>> {
  const secret = JSON.parse(await kubectl('get', 'secret', name, '-n', namespace, '-o', 'json')) as { data: Record<string, string> };
  return Object.fromEntries(Object.entries(secret.data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));
}

/** Runs testing/sdk-program.ts with exactly the Secret's variables as its environment (plus what runs Node). */
function sdkProgram(env: Record<string, string>, ...args: string[]): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['-r', '@swc-node/register', join(__dirname, 'testing/sdk-program.ts'), ...args],
      { cwd: repoRoot(), env: { ...env, ...sourceEnv(), PATH: process.env.PATH ?? '' }, timeout: 60_000 },
      (error, stdout, stderr) => (error ? reject(new Error(`sdk-program ${args.join(' ')}: ${stderr || error.message}`)) : resolve(JSON.parse(stdout) as Record<string, unknown>)),
    );
  });
}

async function startOperator(identity: string): Promise<AppProcess> {
  return startApp('operator', {
    from: 'source',
    logFile: join(stack.stateDir, 'logs', `${identity}.log`),
    env: {
      KUBECONFIG: cluster.kubeconfig,
      CONTROL_REDIS_URL: stack.control.url,
      REGISTRY_SEAL_KEY: stack.registrySealKey,
      QDRANT_URL: stack.qdrant?.url ?? '',
      KAFKA_BROKERS: stack.kafka?.brokers.join(',') ?? '',
      EMBEDDING_URL: stack.embedder?.url ?? '',
      KV_GATEWAY_URL: stack.apps['kv-gateway']?.url ?? '',
      VECTOR_GATEWAY_URL: stack.apps['vector-gateway']?.url ?? '',
      STREAM_GATEWAY_URL: stack.apps['stream-gateway']?.url ?? '',
      QUEUE_GATEWAY_URL: stack.apps['queue-gateway']?.url ?? '',
      MANAGED_REDIS_IMAGE: cluster.env.RESTASH_REDIS_IMAGE ?? '',
      MANAGED_REDIS_PULL_POLICY: 'Never',
      // hostPath volumes (the test cluster's provisioner) ignore fsGroup.
      MANAGED_REDIS_RUN_AS_USER: '0',
      POD_NAME: identity,
      RESYNC_SECONDS: '30',
      LOG_LEVEL: 'warn',
    },
  });
}

async function leaderOf(): Promise<string | undefined> {
  const lease = JSON.parse(await kubectl('get', 'lease', 'restash-operator', '-n', 'default', '-o', 'json')) as { spec?: { holderIdentity?: string } };
  return lease.spec?.holderIdentity || undefined;
}

async function metric(operator: AppProcess, name: string): Promise<number | undefined> {
  const text = await (await fetch(`${operator.managementUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `) || l.startsWith(`${name}{`));
  return line ? Number(line.split(' ').pop()) : undefined;
}

async function brokerTopics(prefix: string): Promise<Record<string, number>> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const names = (await admin.listTopics()).filter((t) => t.startsWith(prefix));
    if (names.length === 0) return {};
    const { topics } = await admin.fetchTopicMetadata({ topics: names });
    return Object.fromEntries(topics.map((t) => [t.name.slice(prefix.length), t.partitions.length]));
  } finally {
    await admin.disconnect();
  }
}

async function collectionExists(name: string): Promise<boolean> {
  return (await fetch(`${stack.qdrant?.url}/collections/${name}`)).status === 200;
}

/** The registry's token records of a tenant (two per resource: standard and read-only). */
async function tokenRecords(tenant: string): Promise<number> {
  let count = 0;
  for await (const keys of control.scanStream({ match: 'restash:v1:token:*', count: 500 }) as AsyncIterable<string[]>) {
    for (const raw of keys.length > 0 ? await control.mget(...keys) : []) if (raw && (JSON.parse(raw) as { tenant: string }).tenant === tenant) count++;
  }
  return count;
}

beforeAll(async () => {
  cluster = await startCluster();
  await kubectl('apply', '--server-side', '-f', join(repoRoot(), 'deploy/crds'));
  await kubectl('wait', '--for=condition=Established', '--timeout=60s', 'crd', '-l', 'app.kubernetes.io/part-of=restash');
  stack = await startStack({ from: 'source', registryApplier: true, qdrant: true, embedder: true, kafka: true, kvDatabases: [{ id: 'external' }], apps: ['kv-gateway', 'vector-gateway', 'stream-gateway', 'queue-gateway', 'queue-worker'] });
  control = new IORedis(stack.control.url);
  kafka = new Kafka({ brokers: stack.kafka?.brokers ?? [], logLevel: logLevel.NOTHING });
  sink = createServer((request: IncomingMessage, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      received.push({ body, signature: String(request.headers['upstash-signature'] ?? ''), url: `http://127.0.0.1:${(sink.address() as AddressInfo).port}${request.url}` });
      response.end('ok');
    });
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  operators = [await startOperator('operator-a'), await startOperator('operator-b')];
  for (const ns of ['team-a', 'team-b']) await kubectl('create', 'namespace', ns);
}, 900_000);

afterAll(async () => {
  await Promise.all(operators.map((o) => o.stop().catch(() => undefined)));
  sink?.close();
  control?.disconnect();
  await stack?.stop();
  await cluster?.stop();
}, 300_000);

describe('the operator on a real cluster', () => {
  it('elects exactly one leader among two replicas', async () => {
    const holder = await waitFor('a Lease holder', leaderOf, 60_000);
    expect(['operator-a', 'operator-b']).toContain(holder);
    const leaders = await Promise.all(operators.map((o) => metric(o, 'restash_operator_leader')));
    expect(leaders.sort()).toEqual([0, 1]);
  }, 90_000);

  it('makes the examples Ready in two namespaces, each with a Secret that configures the official SDKs', async () => {
    for (const ns of ['team-a', 'team-b']) await kubectl('apply', '-n', ns, '-f', EXAMPLES);
    for (const ns of ['team-a', 'team-b']) {
      const items = await allReady(ns, 4, 180_000);
      expect(items.map((i) => i.status?.secretName).sort()).toEqual(['cache', 'docs', 'events', 'jobs']);
      // The queue project's server (the chart's one queue Redis: main), placed by the operator's apply.
      expect(items.filter((i) => i.kind === 'QueueProject').map((i) => i.status?.queueServer)).toEqual(['main']);
    }
    // The printer columns show the condition, and -o wide a queue project's server.
    expect(await kubectl('get', 'kvdb', '-n', 'team-a')).toMatch(/cache\s+True\s+Ready/);
    expect(await kubectl('get', 'qp', '-n', 'team-a', '-o', 'wide')).toMatch(/jobs\s+True\s+Ready\s+\d+\s+main\s/);

    for (const ns of ['team-a', 'team-b']) {
      const kv = await sdkProgram(await secretOf(ns, 'cache'), 'kv', ns);
      expect(kv).toEqual({ value: ns, keys: [`greeting:${ns}`] });
      const vector = await sdkProgram(await secretOf(ns, 'docs'), 'vector', ns);
      expect(vector).toEqual({ ids: [ns], info: 384 });
      const stream = await sdkProgram(await secretOf(ns, 'events'), 'stream', ns);
      expect(stream.values).toEqual([ns]);
      expect(stream.topics).toEqual({ orders: 3, webhooks: 1 });
      const queueSecret = await secretOf(ns, 'jobs');
      const { messageId } = await sdkProgram(queueSecret, 'queue', ns, `http://127.0.0.1:${(sink.address() as AddressInfo).port}/${ns}`);
      expect(messageId).toEqual(expect.any(String));
      const delivery = await waitFor(`the delivery of ${ns}'s message`, async () => received.find((r) => r.url.endsWith(`/${ns}`)), 60_000);
      const receiver = new Receiver({ currentSigningKey: queueSecret['QSTASH_CURRENT_SIGNING_KEY'] ?? '', nextSigningKey: queueSecret['QSTASH_NEXT_SIGNING_KEY'] ?? '' });
      await expect(receiver.verify({ signature: delivery.signature, body: delivery.body, url: delivery.url })).resolves.toBe(true);
    }
    // An @upstash/workflow app configured by the QueueProject's Secret alone (its token in QStash's form) runs a workflow.
    const [port] = await freePorts(1);
    const flow = await sdkProgram({ ...(await secretOf('team-a', 'jobs')), SDK_CHECK_PORT: String(port), SDK_CHECK_WORKFLOW_URL: `http://127.0.0.1:${port}/workflow` }, 'workflow', 'team-a');
    expect(flow).toMatchObject({ state: 'RUN_SUCCESS', result: { first: 'team-a!', echo: 'team-a!', status: 200 } });
    // KV through a managed Redis pod: the database's server is the StatefulSet's.
    expect(await kubectl('get', 'statefulset', 'redis-cache', '-n', 'team-a', '-o', 'jsonpath={.status.readyReplicas}')).toBe('1');
  }, 300_000);

  it("gives one namespace's credentials no access to the other's resources", async () => {
    const a = { kv: await secretOf('team-a', 'cache'), stream: await secretOf('team-a', 'events'), vector: await secretOf('team-a', 'docs') };
    const b = { kv: await secretOf('team-b', 'cache'), stream: await secretOf('team-b', 'events') };
    expect(a.kv['UPSTASH_REDIS_REST_TOKEN']).not.toBe(b.kv['UPSTASH_REDIS_REST_TOKEN']);
    // team-b's token reaches team-b's own server: team-a's keys are not there.
    const bKeys = await sdkProgram(b.kv, 'kv', 'team-b');
    expect(bKeys.keys).toEqual(['greeting:team-b']);
    // team-a's user name with team-b's password: refused.
    const crossed = { ...a.stream, UPSTASH_KAFKA_REST_PASSWORD: b.stream['UPSTASH_KAFKA_REST_PASSWORD'] ?? '' };
    await expect(sdkProgram(crossed, 'stream', 'x')).rejects.toThrow(/401|[Uu]nauthori[sz]ed|credentials/);
    // A made-up token: refused by every gateway.
    await expect(sdkProgram({ ...a.vector, UPSTASH_VECTOR_REST_TOKEN: 'not-a-token' }, 'vector', 'x')).rejects.toThrow(/401|[Uu]nauthori[sz]ed|token/);
  }, 120_000);

  it('reconciles a spec change: more partitions and a new topic', async () => {
    await kubectl('patch', 'stc', 'events', '-n', 'team-a', '--type=merge', '-p', JSON.stringify({ spec: { topics: [{ name: 'orders', partitions: 5 }, { name: 'audit', partitions: 2 }] } }));
    await waitFor('the topics on the broker', async () => {
      const topics = await brokerTopics('restash.team-a.events.');
      return topics['orders'] === 5 && topics['audit'] === 2 && topics['webhooks'] === undefined && topics;
    });
    await allReady('team-a', 4);
  }, 150_000);

  it('refuses bad specs at the API server or marks them not Ready with a reason', async () => {
    const refused = async (yaml: string, pattern: RegExp) => {
      await expect(apply(yaml, 'team-a')).rejects.toThrow(pattern);
    };
    await refused('apiVersion: restash.dev/v1alpha1\nkind: StreamCluster\nmetadata: {name: bad}\nspec: {topics: [{name: t, partitions: -1}]}\n', /partitions/);
    await refused('apiVersion: restash.dev/v1alpha1\nkind: VectorIndex\nmetadata: {name: bad}\nspec: {dimension: 0}\n', /dimension/);
    await refused('apiVersion: restash.dev/v1alpha1\nkind: VectorIndex\nmetadata: {name: bad}\nspec: {dimension: 3, similarityFunction: MANHATTAN}\n', /similarityFunction/);
    await refused('apiVersion: restash.dev/v1alpha1\nkind: QueueProject\nmetadata: {name: bad}\nspec: {colour: red}\n', /colour|unknown field/);
    await refused('apiVersion: restash.dev/v1alpha1\nkind: QueueProject\nmetadata: {name: bad}\nspec: {retries: {default: 5, max: 2}}\n', /retries/);
    // Partitions cannot be decreased (a transition rule).
    await expect(kubectl('patch', 'stc', 'events', '-n', 'team-a', '--type=merge', '-p', JSON.stringify({ spec: { topics: [{ name: 'orders', partitions: 1 }, { name: 'audit', partitions: 2 }] } }))).rejects.toThrow(
      /cannot be decreased/,
    );
    // Valid for the API server, not servable: an external Redis whose Secret does not exist.
    await apply('apiVersion: restash.dev/v1alpha1\nkind: KvDatabase\nmetadata: {name: elsewhere}\nspec: {redis: {external: {urlSecretRef: {name: missing, key: url}}}}\n', 'team-a');
    const item = await waitFor('elsewhere not Ready', async () => (await resources('team-a')).find((i) => i.metadata.name === 'elsewhere' && ready(i)?.status === 'False'));
    expect(ready(item)).toMatchObject({ reason: 'SecretNotFound' });
    expect(await kubectl('get', 'events', '-n', 'team-a', '--field-selector', 'involvedObject.name=elsewhere', '-o', 'jsonpath={.items[*].reason}')).toContain('SecretNotFound');
    // The other resources of the namespace are still served.
    expect((await sdkProgram(await secretOf('team-a', 'cache'), 'kv', 'team-a')).value).toBe('team-a');
    await kubectl('delete', 'kvdb', 'elsewhere', '-n', 'team-a', '--wait=true', '--timeout=60s');
    // engine valkey where the operator has no MANAGED_VALKEY_IMAGE: not Ready with the reason, nothing started; the engine never changes.
    await apply('apiVersion: restash.dev/v1alpha1\nkind: KvDatabase\nmetadata: {name: vk}\nspec: {redis: {managed: {engine: valkey}}}\n', 'team-a');
    const valkey = await waitFor('vk not Ready', async () => (await resources('team-a')).find((i) => i.metadata.name === 'vk' && ready(i)?.status === 'False'));
    expect(ready(valkey)).toMatchObject({ reason: 'NotSupported', message: expect.stringContaining("engine valkey needs the operator's MANAGED_VALKEY_IMAGE") });
    await expect(kubectl('get', 'statefulset', 'redis-vk', '-n', 'team-a')).rejects.toThrow(/NotFound/);
    await expect(kubectl('patch', 'kvdb', 'vk', '-n', 'team-a', '--type=merge', '-p', JSON.stringify({ spec: { redis: { managed: { engine: 'redis' } } } }))).rejects.toThrow(/engine is set when a database is created/);
    await kubectl('delete', 'kvdb', 'vk', '-n', 'team-a', '--wait=true', '--timeout=60s');
  }, 150_000);

  it('backs up a KV database into an S3 bucket on demand and on a schedule, applies the retention, and refuses bad backup specs', async () => {
    const credentials = { accessKeyId: 'team-a-backups', secretAccessKey: 'team-a-backups-secret' };
    const s3 = await startS3Server({ credentials, logFile: join(stack.stateDir, 'logs', 'seaweedfs.log') });
    const bucket = new S3Client({ endpoint: s3.endpoint, region: s3.region, forcePathStyle: true, credentials });
    interface Backup {
      metadata: { name: string; deletionTimestamp?: string; labels?: Record<string, string> };
      status?: { phase?: string; message?: string; bytes?: number; sha256?: string; location?: { bucket: string; key: string } };
    }
    const backups = async () => (JSON.parse(await kubectl('get', 'kvbackups', '-n', 'team-a', '-o', 'json')) as { items: Backup[] }).items;
    const keys = async () => ((await bucket.send(new ListObjectsV2Command({ Bucket: 'kv-backups' }))).Contents ?? []).map((o) => o.Key).sort();
    const database = async () => JSON.parse(await kubectl('get', 'kvdb', 'cache', '-n', 'team-a', '-o', 'json')) as { status: Record<string, string> };
    try {
      await bucket.send(new CreateBucketCommand({ Bucket: 'kv-backups' }));
      await kubectl('create', 'secret', 'generic', 's3', '-n', 'team-a', `--from-literal=id=${credentials.accessKeyId}`, `--from-literal=secret=${credentials.secretAccessKey}`);
      const target = { endpoint: s3.endpoint, bucket: 'kv-backups', accessKeyIdSecretRef: { name: 's3', key: 'id' }, secretAccessKeySecretRef: { name: 's3', key: 'secret' } };
      const patch = (spec: unknown) => kubectl('patch', 'kvdb', 'cache', '-n', 'team-a', '--type=merge', '-p', JSON.stringify({ spec }));

      // Bad specs: refused by the API server with a reason.
      await expect(patch({ backup: { s3: target, schedule: 'every day' } })).rejects.toThrow(/schedule.*cron/);
      await expect(patch({ backup: { s3: target, schedule: '0 0 3 * * * 2026' } })).rejects.toThrow(/schedule/);
      await expect(patch({ restore: { backup: { name: 'cache-now' } } })).rejects.toThrow(/a restore into an existing database is refused/);

      // On demand: the snapshot in the bucket is the one the status describes.
      await patch({ backup: { s3: target } });
      await apply('apiVersion: restash.dev/v1alpha1\nkind: KvBackup\nmetadata: {name: cache-now}\nspec: {database: cache}\n', 'team-a');
      const done = await waitFor('cache-now Completed', async () => (await backups()).find((b) => b.metadata.name === 'cache-now' && b.status?.phase === 'Completed'), 60_000);
      const object = await bucket.send(new GetObjectCommand({ Bucket: 'kv-backups', Key: 'team-a/cache/cache-now.rdb' }));
      const body = Buffer.from((await object.Body?.transformToByteArray()) ?? []);
      expect(body.subarray(0, 5).toString()).toBe('REDIS');
      expect(done.status).toMatchObject({ bytes: body.length, sha256: createHash('sha256').update(body).digest('hex'), location: { bucket: 'kv-backups', key: 'team-a/cache/cache-now.rdb' } });
      expect((await database()).status).toMatchObject({ lastSuccessfulBackup: 'cache-now' });
      expect(await kubectl('get', 'kvbackup', 'cache-now', '-n', 'team-a')).toMatch(/cache-now\s+cache\s+Completed\s+\d+/);

      // A database without spec.backup: the backup fails with the reason.
      await apply('apiVersion: restash.dev/v1alpha1\nkind: KvBackup\nmetadata: {name: nowhere}\nspec: {database: cache}\n', 'team-b');
      const failed = await waitFor('nowhere Failed', async () => {
        const item = JSON.parse(await kubectl('get', 'kvbackup', 'nowhere', '-n', 'team-b', '-o', 'json')) as Backup;
        return item.status?.phase === 'Failed' && item;
      });
      expect(failed.status?.message).toBe('KvDatabase cache has no spec.backup: nowhere to store the snapshot');
      await kubectl('delete', 'kvbackup', 'nowhere', '-n', 'team-b', '--wait=true', '--timeout=30s');

      // On a schedule every 3 s, keeping 2: the on-demand backup goes first, then each older scheduled one, with its snapshot.
      const since = Date.now();
      await patch({ backup: { s3: target, schedule: '*/3 * * * * *', retention: { count: 2 } } });
      await waitFor('three scheduled backups completed', async () => Date.parse((await database()).status['lastSuccessfulBackupTime'] ?? '') - since > 7_000, 60_000);
      await patch({ backup: { s3: target, schedule: null, retention: { count: 2 } } });
      const kept = await waitFor('the retention applied, and the snapshots of removed backups deleted', async () => {
        const items = await backups();
        const live = items.filter((b) => !b.metadata.deletionTimestamp && b.status?.phase === 'Completed');
        const busy = items.some((b) => b.metadata.deletionTimestamp || b.status?.phase !== 'Completed');
        const stored = await keys();
        return !busy && live.length === 2 && JSON.stringify(stored) === JSON.stringify(live.map((b) => b.status?.location?.key).sort()) && live;
      });
      expect(kept.map((b) => b.metadata.name)).not.toContain('cache-now');
      expect(kept.every((b) => /^cache-\d{14}$/.test(b.metadata.name) && b.metadata.labels?.['restash.dev/scheduled'] === 'true')).toBe(true);
      expect(await kubectl('get', 'events', '-n', 'team-a', '--field-selector', 'involvedObject.name=cache', '-o', 'jsonpath={.items[*].reason}')).toContain('BackupRemoved');
      expect((await database()).status['nextScheduleTime']).toBeDefined();

      // Deleting a KvBackup deletes its snapshot.
      await kubectl('delete', 'kvbackups', '--all', '-n', 'team-a', '--wait=true', '--timeout=60s');
      expect(await keys()).toEqual([]);
    } finally {
      await kubectl('patch', 'kvdb', 'cache', '-n', 'team-a', '--type=json', '-p', '[{"op":"remove","path":"/spec/backup"}]').catch(() => undefined);
      bucket.destroy();
      await s3.stop();
    }
  }, 300_000);

  it('serves a KV database on an external Redis named by a Secret, and empties it when the database is deleted', async () => {
    const server = stack.kvRedis.get('external');
    const { username, password } = stack.dataRedisAuth;
    const url = `redis://${username}:${password}@127.0.0.1:${server?.port}/0`;
    await kubectl('create', 'secret', 'generic', 'external-redis', '-n', 'team-a', `--from-literal=url=${url}`);
    await apply('apiVersion: restash.dev/v1alpha1\nkind: KvDatabase\nmetadata: {name: outside}\nspec: {redis: {external: {urlSecretRef: {name: external-redis, key: url}}}}\n', 'team-a');
    await waitFor('outside Ready', async () => (await resources('team-a')).find((i) => i.metadata.name === 'outside' && ready(i)?.status === 'True'));
    expect(await sdkProgram(await secretOf('team-a', 'outside'), 'kv', 'outside')).toEqual({ value: 'outside', keys: ['greeting:outside'] });
    // No managed server for it.
    await expect(kubectl('get', 'statefulset', 'redis-outside', '-n', 'team-a')).rejects.toThrow(/NotFound/);
    // The registry holds its URL sealed: the password appears nowhere in the control Redis.
    const values = await control.mget(...(await control.keys('restash:v1:*')).filter((k) => !k.includes(':quota:')));
    expect(values.some((v) => v?.includes(password))).toBe(false);

    await kubectl('delete', 'kvdb', 'outside', '-n', 'team-a', '--wait=true', '--timeout=60s');
    const direct = new IORedis(url);
    try {
      expect(await direct.dbsize()).toBe(0);
    } finally {
      direct.disconnect();
    }
  }, 120_000);

  it('rotates a resource\'s tokens when asked by annotation: the old ones stop working', async () => {
    const before = await secretOf('team-a', 'cache');
    await kubectl('annotate', 'kvdb', 'cache', '-n', 'team-a', 'restash.dev/rotate-tokens=2026-11-22');
    const after = await waitFor('new tokens', async () => {
      const secret = await secretOf('team-a', 'cache');
      return secret['UPSTASH_REDIS_REST_TOKEN'] !== before['UPSTASH_REDIS_REST_TOKEN'] && secret;
    });
    expect(after['UPSTASH_REDIS_REST_READONLY_TOKEN']).not.toBe(before['UPSTASH_REDIS_REST_READONLY_TOKEN']);
    expect((await sdkProgram(after, 'kv', 'team-a')).value).toBe('team-a');
    await waitFor('the old token refused', async () => sdkProgram(before, 'kv', 'team-a').then(() => false, (error: Error) => /401|[Uu]nauthori[sz]ed/.test(error.message)), 30_000);
    // Kept from then on: a later pass does not rotate again.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect((await secretOf('team-a', 'cache'))['UPSTASH_REDIS_REST_TOKEN']).toBe(after['UPSTASH_REDIS_REST_TOKEN']);
  }, 120_000);

  it("rewrites a queue project's Secret after signing-key rotations (announced: well before the 30 s resync), its tokens kept", async () => {
    const before = await secretOf('team-b', 'jobs');
    const rotate = async () => {
      const response = await fetch(`${before['QSTASH_URL']}/v2/keys/rotate`, { method: 'POST', headers: { Authorization: `Bearer ${before['QSTASH_TOKEN']}` } });
      expect(response.status).toBe(200);
      return (await response.json()) as { current: string; next: string };
    };
    const first = await rotate();
    const second = await rotate();
    expect(second.current).toBe(first.next);
    // RESYNC_SECONDS is 30: a Secret updated within 15 s was updated by the registry's announcement.
    const after = await waitFor(
      'the rotated keys in the Secret',
      async () => {
        const secret = await secretOf('team-b', 'jobs');
        return secret['QSTASH_CURRENT_SIGNING_KEY'] === second.current && secret['QSTASH_NEXT_SIGNING_KEY'] === second.next && secret;
      },
      15_000,
    );
    expect(after['QSTASH_TOKEN']).toBe(before['QSTASH_TOKEN']);
    expect(after['QSTASH_READONLY_TOKEN']).toBe(before['QSTASH_READONLY_TOKEN']);

    // A delivery signed now verifies with the Secret's keys; the keys of creation (two rotations ago) fail.
    await sdkProgram(after, 'queue', 'team-b', `http://127.0.0.1:${(sink.address() as AddressInfo).port}/team-b-rotated`);
    const delivery = await waitFor('the delivery after the rotations', async () => received.find((r) => r.url.endsWith('/team-b-rotated')), 60_000);
    const message = { signature: delivery.signature, body: delivery.body, url: delivery.url };
    await expect(new Receiver({ currentSigningKey: after['QSTASH_CURRENT_SIGNING_KEY'] ?? '', nextSigningKey: after['QSTASH_NEXT_SIGNING_KEY'] ?? '' }).verify(message)).resolves.toBe(true);
    await expect(new Receiver({ currentSigningKey: before['QSTASH_CURRENT_SIGNING_KEY'] ?? '', nextSigningKey: before['QSTASH_NEXT_SIGNING_KEY'] ?? '' }).verify(message)).rejects.toThrow();

    // A later pass (the resync, a spec change) keeps them.
    await kubectl('annotate', 'queueproject', 'jobs', '-n', 'team-b', '--overwrite', 'restash.dev/touched=1');
    await allReady('team-b', 4);
    expect(await secretOf('team-b', 'jobs')).toMatchObject({ QSTASH_CURRENT_SIGNING_KEY: second.current, QSTASH_NEXT_SIGNING_KEY: second.next });
  }, 120_000);

  it('converges after the leader is killed with SIGKILL mid-reconcile, with nothing duplicated or leaked', async () => {
    await kubectl('create', 'namespace', 'team-c');
    const leader = await leaderOf();
    const victim = operators.find((_, i) => ['operator-a', 'operator-b'][i] === leader);
    await kubectl('apply', '-n', 'team-c', '-f', EXAMPLES);
    // Mid-reconcile: the first Secret is written, the Redis server not ready yet.
    await waitFor('the first Secret of team-c', async () => (await kubectl('get', 'secrets', '-n', 'team-c', '-o', 'name')).includes('secret/'), 30_000);
    await victim?.kill();
    // The standby takes the Lease once the dead leader's claim expires (15 s), then converges.
    await waitFor('a new leader', async () => {
      const holder = await leaderOf();
      return holder !== undefined && holder !== leader && holder;
    }, 60_000);
    const items = await allReady('team-c', 4, 180_000);
    expect(items).toHaveLength(4);
    expect(await leaderOf()).not.toBe(leader);
    expect(await kubectl('get', 'statefulsets,secrets,services', '-n', 'team-c', '-o', 'name')).toEqual(
      ['statefulset.apps/redis-cache', 'secret/cache', 'secret/docs', 'secret/events', 'secret/jobs', 'secret/redis-cache', 'service/redis-cache', 'service/redis-cache-headless'].join('\n'),
    );
    expect(await tokenRecords('team-c')).toBe(8);
    expect((await sdkProgram(await secretOf('team-c', 'cache'), 'kv', 'team-c')).value).toBe('team-c');
    await victim?.start();
  }, 300_000);

  it('heals the registry when the control Redis restarts empty: Ready False while it is away, 503 and never 401 meanwhile, every tenant served again within 10 s', async () => {
    const cache = await secretOf('team-a', 'cache');
    const statuses = new Map<number, number>();
    const get = async () => {
      const response = await fetch(`${cache['UPSTASH_REDIS_REST_URL']}/get/greeting:team-a`, { headers: { authorization: `Bearer ${cache['UPSTASH_REDIS_REST_TOKEN']}` } });
      statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      return response.status;
    };
    expect(await get()).toBe(200);
    // Run-time ACL state no resource declares: a tenant ACL user and its ACL RESTTOKEN token, copied into the
    // database's `cache.acl` Secret by the operator.
    const kv = async (token: string, command: unknown[]) => {
      const response = await fetch(cache['UPSTASH_REDIS_REST_URL'] ?? '', { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: JSON.stringify(command) });
      return { status: response.status, body: (await response.json()) as { result?: unknown; error?: string } };
    };
    const standard = cache['UPSTASH_REDIS_REST_TOKEN'] ?? '';
    expect((await kv(standard, ['ACL', 'SETUSER', 'reader', 'on', '>reader-password', '~*', '+@read'])).body).toEqual({ result: 'OK' });
    const aclToken = String((await kv(standard, ['ACL', 'RESTTOKEN', 'reader', 'reader-password'])).body.result);
    expect((await kv(aclToken, ['GET', 'greeting:team-a'])).status).toBe(200);
    await waitFor('the ACL state copied into Secret cache.acl', async () => {
      const state = JSON.parse((await secretOf('team-a', 'cache.acl').catch(() => ({}) as Record<string, string>))['acl-state.json'] ?? '{}') as { tokens?: unknown[]; users?: Record<string, string> };
      return state.tokens?.length === 1 && Object.keys(state.users ?? {}).length === 1;
    }, 30_000);
    await stack.control.kill();
    const killed = performance.now();
    // No change needed: the leader's registry check marks every resource of every namespace.
    await waitFor('Ready=False RegistryUnavailable everywhere', async () => {
      const all = (await Promise.all(['team-a', 'team-b', 'team-c'].map((ns) => resources(ns)))).flat();
      return all.length > 0 && all.every((i) => ready(i)?.status === 'False' && ready(i)?.reason === 'RegistryUnavailable');
    }, 60_000);
    const marked = (performance.now() - killed) / 1000;
    console.log(`every resource Ready=False RegistryUnavailable ${marked.toFixed(1)} s after the control Redis was killed`);
    await get();
    // Back, empty (the test stack's control Redis keeps nothing): requests go on while the leader writes every namespace again.
    await stack.control.restart();
    const back = performance.now();
    const heal: { seconds?: number } = {};
    const load = (async () => {
      while (heal.seconds === undefined || performance.now() - back < heal.seconds * 1000 + 2_000) {
        await get().catch(() => undefined);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    await waitFor('the registry marker written again', async () => (await control.exists('restash:v1:marker').catch(() => 0)) === 1, 30_000);
    const healed = (heal.seconds = (performance.now() - back) / 1000);
    await load;
    expect(await get()).toBe(200);
    console.log(`registry healed ${healed.toFixed(1)} s after the control Redis came back empty; KV answers from the kill on, by status: ${JSON.stringify(Object.fromEntries(statuses))}`);
    expect(healed).toBeLessThan(10);
    expect(statuses.has(401)).toBe(false);
    for (const ns of ['team-a', 'team-b', 'team-c']) await allReady(ns, 4, 60_000);
    for (const ns of ['team-a', 'team-b']) expect((await sdkProgram(await secretOf(ns, 'cache'), 'kv', ns)).value).toBe(ns);
    // The ACL token came back with the registry, with its rights: it reads, and cannot write.
    expect((await kv(aclToken, ['GET', 'greeting:team-a'])).status).toBe(200);
    expect(await kv(aclToken, ['SET', 'greeting:team-a', 'x'])).toMatchObject({ status: 400, body: { error: expect.stringMatching(/^NOPERM/) } });
    // The registry is complete again: a made-up token is unknown, not unavailable.
    await expect(sdkProgram({ ...cache, UPSTASH_REDIS_REST_TOKEN: 'not-a-token' }, 'kv', 'x')).rejects.toThrow(/401|[Uu]nauthori[sz]ed/);
  }, 240_000);

  it('deletes everything a resource created when it is deleted', async () => {
    expect(await collectionExists('restash.team-b.docs')).toBe(true);
    expect(Object.keys(await brokerTopics('restash.team-b.events.')).sort()).toEqual(['orders', 'webhooks']);
    await kubectl('delete', '-n', 'team-b', '-f', EXAMPLES, '--wait=true', '--timeout=120s');
    expect(await resources('team-b')).toEqual([]);
    expect(await collectionExists('restash.team-b.docs')).toBe(false);
    await waitFor('team-b topics gone', async () => Object.keys(await brokerTopics('restash.team-b.events.')).length === 0, 60_000);
    // The Redis pod stops gracefully; its PVC goes once the pod is gone.
    await waitFor('team-b objects gone', async () => (await kubectl('get', 'statefulsets,pods,pvc,secrets,services', '-n', 'team-b', '-o', 'name')) === '', 90_000);
    expect(await control.exists('restash:v1:tenant:team-b')).toBe(0);
    expect(await tokenRecords('team-b')).toBe(0);
    // team-a is untouched.
    expect((await sdkProgram(await secretOf('team-a', 'cache'), 'kv', 'team-a')).value).toBe('team-a');
  }, 240_000);

  it('deletes a namespace with a managed KV database: its pods go first, its data with its volumes, and the namespace goes', async () => {
    await kubectl('create', 'namespace', 'team-gone');
    await apply('apiVersion: restash.dev/v1alpha1\nkind: KvDatabase\nmetadata: {name: cache}\nspec: {redis: {managed: {storage: 64Mi}}}\n', 'team-gone');
    await waitFor('team-gone/cache Ready', async () => (await resources('team-gone')).find((i) => ready(i)?.status === 'True'));
    expect((await sdkProgram(await secretOf('team-gone', 'cache'), 'kv', 'team-gone')).value).toBe('team-gone');
    // Kubernetes deletes the pods at once; the KvDatabase's finalizer runs after, when its Redis cannot be reached.
    await kubectl('delete', 'namespace', 'team-gone', '--wait=true', '--timeout=120s');
    expect(await control.exists('restash:v1:tenant:team-gone')).toBe(0);
    expect(await tokenRecords('team-gone')).toBe(0);
  }, 240_000);
});
