import { createServer } from 'node:net';
import { freePorts } from './process';

describe('freePorts', () => {
  it('hands out distinct bindable ports below the ephemeral range, never the same one twice', async () => {
    const first = await freePorts(20);
    const second = await freePorts(20);
    const all = [...first, ...second];
    expect(new Set(all).size).toBe(40);
    for (const port of all) {
      expect(port).toBeGreaterThanOrEqual(20_000);
      expect(port).toBeLessThan(30_000);
    }
    const server = createServer();
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(first[0], '127.0.0.1', resolve));
    await new Promise((resolve) => server.close(resolve));
  });
});
