import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A fetch-style handler, as `@upstash/workflow`'s `serve(…).handler` is. */
export type FetchHandler = (request: Request) => Promise<Response>;

/**
 * A local workflow application on 127.0.0.1: each path runs a fetch-style handler (the SDK's platform-neutral
 * `serve`), as a Next.js route or a Cloudflare worker would. Every request is counted per path.
 */
export interface WorkflowApp {
  url: string;
  /** Requests received per path (without the query). */
  hits: Map<string, number>;
  route(path: string, handler: FetchHandler): void;
  close(): Promise<void>;
}

/** Starts a {@link WorkflowApp} on a free port of 127.0.0.1. */
export async function startWorkflowApp(): Promise<WorkflowApp> {
  const routes = new Map<string, FetchHandler>();
  const hits = new Map<string, number>();
  let base = '';
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      hits.set(path, (hits.get(path) ?? 0) + 1);
      const handler = routes.get(path);
      if (!handler) {
        res.writeHead(404).end('no such workflow');
        return;
      }
      const headers = new Headers();
      for (const [name, value] of Object.entries(req.headers)) if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
      const method = req.method ?? 'POST';
      const body = method === 'GET' || method === 'HEAD' ? undefined : Buffer.concat(chunks);
      handler(new Request(`${base}${req.url ?? '/'}`, { method, headers, ...(body ? { body } : {}) }))
        .then(async (response) => {
          res.writeHead(response.status, Object.fromEntries(response.headers));
          res.end(Buffer.from(await response.arrayBuffer()));
        })
        .catch((error: unknown) => res.writeHead(500).end(String(error)));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url: base,
    hits,
    route: (path, handler) => void routes.set(path, handler),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
