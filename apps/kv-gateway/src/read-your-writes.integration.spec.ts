import { Redis } from '@upstash/redis';
import { Client } from 'undici';
import { type KvStack, startKvStack } from './testing/kv-stack';

/** Concurrent clients (and, over raw HTTP, keep-alive connections) each test runs at once. */
const CLIENTS = 50;
/** Rounds of each client's loop. */
const ROUNDS = 40;
const SYNC_TOKEN = 'upstash-sync-token';

/** A read that did not see the write answered before it: what these tests exist to catch. */
interface StaleRead {
  where: string;
  wrote: unknown;
  read: unknown;
}

/** The two parts of an `upstash-sync-token`, `<gateway process id>-<counter>` (docs/kv.md, "KV: read-your-writes"). */
function parseSyncToken(token: string | null | undefined): { instance: string; counter: number } {
  const match = /^([0-9a-z]+)-(\d+)$/i.exec(token ?? '');
  if (!match) throw new Error(`not a sync token: ${JSON.stringify(token)}`);
  return { instance: match[1], counter: Number(match[2]) };
}

/**
 * Checks the write tokens of one database collected while nothing else wrote to it: all of one gateway
 * process, and each write moved the database's counter by one and answered the value it moved it to, so
 * the counters are exactly `base + 1 … base + writes`, each once (no two concurrent writes share one).
 */
function expectOneCounterPerWrite(tokens: string[], base: { instance: string; counter: number }, writes: number): void {
  expect(tokens).toHaveLength(writes);
  expect(new Set(tokens.map((t) => parseSyncToken(t).instance))).toEqual(new Set([base.instance]));
  const counters = tokens.map((t) => parseSyncToken(t).counter).sort((a, b) => a - b);
  expect(counters).toEqual(Array.from({ length: writes }, (_, i) => base.counter + 1 + i));
}

/** Checks that a client's successive tokens, in the order its requests answered, never go back. */
function expectNonDecreasing(counters: number[], where: string): void {
  const back = counters.findIndex((c, i) => i > 0 && c < counters[i - 1]);
  expect({ where, back: back < 0 ? undefined : counters.slice(Math.max(0, back - 1), back + 1) }).toEqual({ where, back: undefined });
}

/** Counts the requests in flight at once, to show that the loops really ran concurrently. */
class InFlight {
  private now = 0;
  /** The most requests that were in flight at once. */
  max = 0;

  /** Runs `request`, counting it in flight until it settles. */
  async track<T>(request: Promise<T>): Promise<T> {
    this.max = Math.max(this.max, ++this.now);
    try {
      return await request;
    } finally {
      this.now--;
    }
  }
}

/**
 * Read-your-writes under load (docs/kv.md, "KV: read-your-writes"): 50 clients at once, each reading back
 * what it, or another client whose sync token it was handed, has just written, with the official
 * @upstash/redis SDK (readYourWrites on, its default) and with raw HTTP on 50 keep-alive connections. Every
 * value written is unique, so a read that misses a write answered before it was sent returns an older value
 * and fails the test. The `upstash-sync-token`s of the writes are checked too: one counter per database,
 * moved once by each write, whose answer carries the value it was moved to.
 */
describe('kv-gateway: read-your-writes under 50 concurrent clients', () => {
  let stack: KvStack;
  let token: string;
  let otherToken: string;

  beforeAll(async () => {
    stack = await startKvStack({ acme: [{ name: 'main' }, { name: 'other' }] });
    token = stack.tokens('acme', 'main').standard;
    otherToken = stack.tokens('acme', 'other').standard;
  });
  afterAll(() => stack.stop());

  /** An @upstash/redis client of acme/main with the SDK's defaults (read-your-writes and auto-pipelining on). */
  const sdkClient = () => new Redis({ url: stack.url, token, enableTelemetry: false });

  /** The latest sync token of a database, as a read answers it (no write moves it meanwhile). */
  const latestToken = async (as: string) => {
    const response = await fetch(`${stack.url}/get/ryw-probe`, { headers: { authorization: `Bearer ${as}` } });
    expect(response.status).toBe(200);
    await response.text();
    return parseSyncToken(response.headers.get(SYNC_TOKEN));
  };

  it('SDK: each of 50 clients reads back its own INCR and SET at once, 40 rounds each', async () => {
    const base = await latestToken(token);
    const stale: StaleRead[] = [];
    const writeTokens: string[] = [];
    const inFlight = new InFlight();

    await Promise.all(
      Array.from({ length: CLIENTS }, async (_, c) => {
        const redis = sdkClient();
        const counters: number[] = [];
        /** Runs one write, keeping the token its answer carried (the client has nothing else in flight). */
        const write = async <T>(request: Promise<T>): Promise<T> => {
          const reply = await inFlight.track(request);
          writeTokens.push(redis.readYourWritesSyncToken ?? '');
          counters.push(parseSyncToken(redis.readYourWritesSyncToken).counter);
          return reply;
        };
        for (let r = 0; r < ROUNDS; r++) {
          const incremented = await write(redis.incr(`ryw:sdk:counter:${c}`));
          const counter = await inFlight.track(redis.get<number>(`ryw:sdk:counter:${c}`));
          if (incremented !== r + 1 || counter !== incremented) stale.push({ where: `client ${c} round ${r} INCR`, wrote: incremented, read: counter });

          const value = `client-${c}-round-${r}-${Math.random().toString(36).slice(2)}`;
          expect(await write(redis.set(`ryw:sdk:value:${c}`, value))).toBe('OK');
          const read = await inFlight.track(redis.get<string>(`ryw:sdk:value:${c}`));
          if (read !== value) stale.push({ where: `client ${c} round ${r} SET`, wrote: value, read });
          counters.push(parseSyncToken(redis.readYourWritesSyncToken).counter);
        }
        expectNonDecreasing(counters, `client ${c}`);
      }),
    );

    expect(stale).toEqual([]);
    expect(inFlight.max).toBe(CLIENTS);
    expectOneCounterPerWrite(writeTokens, base, CLIENTS * ROUNDS * 2);
  });

  it('SDK: a client handed another client’s sync token reads that client’s write, 50 pairs at once', async () => {
    const base = await latestToken(token);
    const stale: StaleRead[] = [];
    const writeTokens: string[] = [];
    const inFlight = new InFlight();

    await Promise.all(
      Array.from({ length: CLIENTS }, async (_, c) => {
        const writer = sdkClient();
        const reader = sdkClient();
        for (let r = 0; r < ROUNDS; r++) {
          const key = `ryw:handoff:${c}`; // one key per pair: a stale read answers the previous round's value
          const value = { writer: c, round: r, nonce: Math.random() };
          expect(await inFlight.track(writer.set(key, value))).toBe('OK');
          const handed = writer.readYourWritesSyncToken ?? '';
          writeTokens.push(handed);
          reader.readYourWritesSyncToken = handed;
          const read = await inFlight.track(reader.get<typeof value>(key));
          if (read?.nonce !== value.nonce) stale.push({ where: `pair ${c} round ${r}`, wrote: value, read });
          // A read answers the database's latest token: never older than a write answered before it.
          if (parseSyncToken(reader.readYourWritesSyncToken).counter < parseSyncToken(handed).counter) {
            stale.push({ where: `pair ${c} round ${r} token`, wrote: handed, read: reader.readYourWritesSyncToken });
          }
        }
      }),
    );

    expect(stale).toEqual([]);
    expect(inFlight.max).toBe(CLIENTS);
    expectOneCounterPerWrite(writeTokens, base, CLIENTS * ROUNDS);
  });

  it('raw HTTP: pipelines read their own SET, and a write answered on one connection is read on another, 50 connections at once', async () => {
    const base = await latestToken(token);
    const otherBase = await latestToken(otherToken);
    const connections = Array.from({ length: CLIENTS }, () => new Client(stack.url, { pipelining: 1 }));
    const connected = new Set<Client>();
    for (const connection of connections) connection.on('connect', () => connected.add(connection));
    const stale: StaleRead[] = [];
    const writeTokens: string[] = [];
    const otherWriteTokens: string[] = [];
    const inFlight = new InFlight();

    /** POSTs a JSON body on one connection; answers the parsed body and the sync token. */
    const post = async (connection: Client, path: string, body: unknown, as = token, syncToken?: string) => {
      const headers: Record<string, string> = { authorization: `Bearer ${as}`, 'content-type': 'application/json' };
      if (syncToken !== undefined) headers[SYNC_TOKEN] = syncToken;
      const response = await inFlight.track(connection.request({ path, method: 'POST', headers, body: JSON.stringify(body) }));
      const json: unknown = await response.body.json();
      expect({ path, status: response.statusCode, json }).toEqual({ path, status: 200, json });
      const answered = response.headers[SYNC_TOKEN];
      return { json, syncToken: String(answered) };
    };

    try {
      await Promise.all(
        connections.map(async (connection, c) => {
          const next = connections[(c + 1) % CLIENTS];
          const counters: number[] = [];
          for (let r = 0; r < ROUNDS; r++) {
            const value = `conn-${c}-round-${r}-${Math.random().toString(36).slice(2)}`;
            const pipeline = await post(connection, '/pipeline', [
              ['SET', `ryw:raw:pipeline:${c}`, value],
              ['GET', `ryw:raw:pipeline:${c}`],
            ]);
            writeTokens.push(pipeline.syncToken);
            counters.push(parseSyncToken(pipeline.syncToken).counter);
            const expected = [{ result: 'OK' }, { result: value }];
            if (JSON.stringify(pipeline.json) !== JSON.stringify(expected)) stale.push({ where: `connection ${c} round ${r} pipeline`, wrote: expected, read: pipeline.json });

            // Another database's writes, interleaved, move its own counter only.
            otherWriteTokens.push((await post(connection, '/', ['SET', `ryw:raw:other:${c}`, value], otherToken)).syncToken);

            const written = await post(connection, '/', ['SET', `ryw:raw:handoff:${c}`, value]);
            writeTokens.push(written.syncToken);
            counters.push(parseSyncToken(written.syncToken).counter);
            // Only once the write answered: the read goes out on another connection, a single command and a pipeline.
            const [single, piped] = await Promise.all([
              post(next, '/', ['GET', `ryw:raw:handoff:${c}`], token, written.syncToken),
              post(next, '/pipeline', [['GET', `ryw:raw:handoff:${c}`]], token, written.syncToken),
            ]);
            if (JSON.stringify(single.json) !== JSON.stringify({ result: value })) stale.push({ where: `connection ${c} round ${r} GET on another`, wrote: value, read: single.json });
            if (JSON.stringify(piped.json) !== JSON.stringify([{ result: value }])) stale.push({ where: `connection ${c} round ${r} pipelined GET on another`, wrote: value, read: piped.json });
            for (const read of [single, piped]) {
              if (parseSyncToken(read.syncToken).counter < parseSyncToken(written.syncToken).counter) {
                stale.push({ where: `connection ${c} round ${r} read token`, wrote: written.syncToken, read: read.syncToken });
              }
            }
          }
          expectNonDecreasing(counters, `connection ${c}`);
        }),
      );
    } finally {
      await Promise.all(connections.map((connection) => connection.close()));
    }

    expect(stale).toEqual([]);
    expect(connected.size).toBe(CLIENTS);
    expect(inFlight.max).toBeGreaterThanOrEqual(CLIENTS);
    expectOneCounterPerWrite(writeTokens, base, CLIENTS * ROUNDS * 2);
    expectOneCounterPerWrite(otherWriteTokens, otherBase, CLIENTS * ROUNDS);
  });
});
