import { type Server, createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What a {@link GaugeSink} saw on one path (query dropped). */
export interface Gauge {
  /** Request bodies in arrival order. */
  bodies: string[];
  /** Arrival times, ms. */
  starts: number[];
  /** Requests being answered now. */
  inFlight: number;
  /** The most requests in flight at once so far. */
  maxInFlight: number;
}

/**
 * A destination on 127.0.0.1 that answers 200 after `answerAfterMs` and measures, per path, how many
 * requests it holds at once (the parallelism a queue or flow-control key allowed) and when each arrived (its rate).
 */
export interface GaugeSink {
  url: string;
  on(path: string): Gauge;
  close(): Promise<void>;
}

/** Starts a {@link GaugeSink}. */
export async function startGaugeSink(answerAfterMs: number): Promise<GaugeSink> {
  const gauges = new Map<string, Gauge>();
  const gauge = (path: string): Gauge => {
    let g = gauges.get(path);
    if (!g) {
      g = { bodies: [], starts: [], inFlight: 0, maxInFlight: 0 };
      gauges.set(path, g);
    }
    return g;
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const g = gauge((req.url ?? '/').split('?')[0] as string);
      g.bodies.push(Buffer.concat(chunks).toString('utf8'));
      g.starts.push(Date.now());
      g.inFlight++;
      g.maxInFlight = Math.max(g.maxInFlight, g.inFlight);
      setTimeout(() => {
        g.inFlight--;
        res.end('ok');
      }, answerAfterMs);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    on: gauge,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
