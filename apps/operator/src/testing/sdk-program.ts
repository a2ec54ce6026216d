/**
 * A few lines of each official SDK, configured only from the environment, as an application is whose pod has
 * `envFrom: [{ secretRef: { name: <resource> } }]` (the e2e test runs it with exactly a resource's Secret as
 * its environment). Prints one JSON line with what it read back; exits 1 with the error otherwise.
 *
 * usage: sdk-program <kv|vector|stream|queue|workflow> <marker> [queue destination URL]
 *
 * `queue` with a destination publishes `{ marker }` there and prints the message id. Without one (the SDK Job
 * of the image `localhost/restash/sdk-check`, deploy/images/) it receives its own delivery: it listens on
 * 0.0.0.0:SDK_CHECK_PORT (default 8090), publishes to http://<its first non-internal IPv4 address>:<port>/<marker>,
 * waits up to 60 s for the POST, verifies its Upstash-Signature with @upstash/qstash's Receiver and the
 * QSTASH_CURRENT_SIGNING_KEY / QSTASH_NEXT_SIGNING_KEY of the environment, and prints the message id and
 * the delivered body.
 *
 * With SDK_CHECK_HOLD_MS set, the server prints `{"received": <n>}` as each delivery arrives and answers it only after
 * that many ms, so that a test can kill the queue worker while a delivery is in flight; the first delivery answered on
 * a connection still open counts, and the result adds `deliveries` (how many arrived). SDK_CHECK_WAIT_MS (default
 * 60000) is how long it waits.
 */
import { createServer } from 'node:http';
import { networkInterfaces } from 'node:os';
import { Kafka } from '@upstash/kafka';
import { Client as WorkflowClient, serve } from '@upstash/workflow';
import { Client, Receiver } from '@upstash/qstash';
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
      if (destination !== undefined) {
        const { messageId } = await client.publishJSON({ url: destination, body: { marker } });
        return { messageId };
      }
      return receiveOwnDelivery(client, marker, Number(env['SDK_CHECK_PORT'] ?? 8090));
    }
    case 'workflow':
      return runWorkflowApp(marker, Number(env['SDK_CHECK_PORT'] ?? 8090), env['SDK_CHECK_WORKFLOW_URL'] ?? '', Number(env['SDK_CHECK_WAIT_MS'] ?? 60_000));
    default:
      throw new Error(`unknown API ${api}`);
  }
}

/** This pod's address as other pods reach it: the first non-internal IPv4 address. */
function ownAddress(): string {
  const address = Object.values(networkInterfaces())
    .flat()
    .find((a) => a?.family === 'IPv4' && !a.internal)?.address;
  if (!address) throw new Error('no non-internal IPv4 address to receive the delivery on');
  return address;
}

/**
 * Publishes `{ marker }` to an HTTP server of this process and waits (60 s at most) for the delivery.
 * @returns the message id and the delivered body, once the body's Upstash-Signature verified
 * @throws Error when no delivery arrives in time or its signature does not verify
 */
async function receiveOwnDelivery(client: Client, marker: string, port: number): Promise<unknown> {
  const receiver = new Receiver({ currentSigningKey: process.env['QSTASH_CURRENT_SIGNING_KEY'] ?? '', nextSigningKey: process.env['QSTASH_NEXT_SIGNING_KEY'] ?? '' });
  const url = `http://${ownAddress()}:${port}/${marker}`;
  let deliver: (delivery: { signature: string; body: string }) => void = () => undefined;
  const delivered = new Promise<{ signature: string; body: string }>((resolve) => (deliver = resolve));
  const holdMs = Number(process.env['SDK_CHECK_HOLD_MS'] ?? 0);
  const waitMs = Number(process.env['SDK_CHECK_WAIT_MS'] ?? 60_000);
  let deliveries = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const mine = req.url === `/${marker}`;
      if (mine && holdMs > 0) process.stdout.write(`${JSON.stringify({ received: ++deliveries })}\n`);
      else if (mine) deliveries++;
      setTimeout(() => {
        // A delivery whose sender went away meanwhile (the worker was killed) does not count: it comes again.
        if (req.socket.destroyed) return;
        res.end('ok');
        if (mine) deliver({ signature: String(req.headers['upstash-signature'] ?? ''), body: Buffer.concat(chunks).toString('utf8') });
      }, holdMs);
    });
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '0.0.0.0', resolve));
  let timer: NodeJS.Timeout | undefined;
  try {
    const { messageId } = await client.publishJSON({ url, body: { marker } });
    const timeout = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no delivery to ${url} within ${waitMs} ms`)), waitMs)));
    const { signature, body } = await Promise.race([delivered, timeout]);
    if (!(await receiver.verify({ signature, body, url }))) throw new Error(`the delivery's Upstash-Signature does not verify`);
    return { messageId, delivered: JSON.parse(body) as unknown, verified: true, ...(holdMs > 0 ? { deliveries } : {}) };
  } finally {
    clearTimeout(timer);
    server.closeAllConnections();
    server.close();
  }
}

/**
 * Serves a workflow (and `/echo`, what its `context.call` asks) and runs it once through QStash (see the file comment).
 * @returns the run id, the state the run ended in and its result (the JSON the workflow returned)
 * @throws Error when the run does not end within `waitMs`
 */
async function runWorkflowApp(marker: string, port: number, url: string, waitMs: number): Promise<unknown> {
  if (!url) throw new Error('SDK_CHECK_WORKFLOW_URL is not set');
  const base = url.replace(/\/workflow$/, '');
  const { handler } = serve<{ marker: string }>(async (context) => {
    const first = await context.run('first', () => `${context.requestPayload.marker}!`);
    await context.sleep('nap', 1);
    const echo = await context.call<{ echoed: string }>('echo', { url: `${base}/echo`, method: 'POST', body: JSON.stringify({ echoed: first }) });
    return await context.run('last', () => ({ first, echo: echo.body.echoed, status: echo.status }));
  });
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      if (req.url?.startsWith('/echo')) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(body);
        return;
      }
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) if (typeof value === 'string') headers.set(name, value);
      handler(new Request(`${base}${req.url ?? '/'}`, { method: req.method ?? 'POST', headers, ...(req.method === 'GET' ? {} : { body }) }))
        .then(async (response) => res.writeHead(response.status, Object.fromEntries(response.headers)).end(Buffer.from(await response.arrayBuffer())))
        .catch((error: unknown) => res.writeHead(500).end(String(error)));
    });
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '0.0.0.0', resolve));
  try {
    const client = new WorkflowClient({ baseUrl: process.env['QSTASH_URL'] ?? '', token: process.env['QSTASH_TOKEN'] ?? '' });
    const { workflowRunId } = await client.trigger({ url, body: { marker } });
    const deadline = Date.now() + waitMs;
    for (;;) {
      const [run] = (await client.logs({ workflowRunId })).runs;
      if (run && run.workflowState !== 'RUN_STARTED') return { workflowRunId, state: run.workflowState, result: JSON.parse(run.workflowRunResponse ?? 'null') as unknown };
      if (Date.now() > deadline) throw new Error(`workflow run ${workflowRunId} still ${run?.workflowState ?? 'unlisted'} after ${waitMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  } finally {
    server.closeAllConnections();
    server.close();
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
