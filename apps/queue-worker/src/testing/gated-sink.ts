import { type IncomingHttpHeaders, type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A destination on 127.0.0.1 that records each request's path and headers and answers 200 at once, except on
 * the paths `hold`s names: those answers wait for `release(path)`, so that a test can act between a request and
 * its answer (stop a Redis, kill a worker) however slow the machine is.
 */
export async function startGatedSink(): Promise<{ url: string; on(path: string): IncomingHttpHeaders[]; hold(path: string): void; release(path: string): void; close(): Promise<void> }> {
  const received: Array<{ path: string; headers: IncomingHttpHeaders }> = [];
  const held = new Map<string, Array<() => void>>();
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const path = req.url ?? '/';
      received.push({ path, headers: req.headers });
      const waiting = held.get(path);
      if (waiting) waiting.push(() => res.end('ok'));
      else res.end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    on: (path) => received.filter((r) => r.path === path).map((r) => r.headers),
    hold: (path) => void held.set(path, []),
    release: (path) => {
      for (const answer of held.get(path) ?? []) answer();
      held.delete(path);
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
