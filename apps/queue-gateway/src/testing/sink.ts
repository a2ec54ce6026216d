import { type IncomingHttpHeaders, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request a {@link Sink} received. */
export interface SinkRequest {
  method: string;
  /** Path and query as received. */
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** Arrival time, ms. */
  at: number;
}

/** What the sink answers on a path: a status, headers, a body, and an optional delay before answering. */
export interface SinkAnswer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
  delayMs?: number;
}

/** A local HTTP destination on 127.0.0.1 that records every request and answers as programmed per path. */
export interface Sink {
  url: string;
  requests: SinkRequest[];
  /** Requests whose path (without the query) is `path`. */
  on(path: string): SinkRequest[];
  /** Answers on `path`: the first request gets `answers[0]`, and so on; the last repeats. Default 200 "ok". */
  answer(path: string, ...answers: SinkAnswer[]): void;
  close(): Promise<void>;
}

/** Starts a {@link Sink} on a free port of 127.0.0.1. */
export async function startSink(): Promise<Sink> {
  const requests: SinkRequest[] = [];
  const programs = new Map<string, { answers: SinkAnswer[]; served: number }>();
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = req.url ?? '/';
      requests.push({ method: req.method ?? '', path, headers: req.headers, body: Buffer.concat(chunks), at: Date.now() });
      const program = programs.get(path.split('?')[0] ?? path);
      const answer = program ? (program.answers[Math.min(program.served++, program.answers.length - 1)] as SinkAnswer) : { status: 200, body: 'ok' };
      setTimeout(() => {
        res.writeHead(answer.status, answer.headers ?? {});
        res.end(answer.body ?? '');
      }, answer.delayMs ?? 0);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    on: (path) => requests.filter((r) => (r.path.split('?')[0] ?? r.path) === path),
    answer: (path, ...answers) => void programs.set(path, { answers, served: 0 }),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The items, for `eventually`: throws while there are none. */
export function nonEmpty<T>(items: T[]): [T, ...T[]] {
  if (items.length === 0) throw new Error('nothing yet');
  return items as [T, ...T[]];
}

/** The items, for `eventually`: throws while there are fewer than `n`. */
export function atLeast<T>(items: T[], n: number): T[] {
  if (items.length < n) throw new Error(`${items.length} of ${n} so far`);
  return items;
}
