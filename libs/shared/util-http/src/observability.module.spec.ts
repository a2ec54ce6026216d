import { Readiness } from './observability.module';

describe('Readiness', () => {
  it('is ready when every check passes, and names each failure otherwise', async () => {
    const readiness = new Readiness();
    readiness.register('ok', async () => 'fine');
    expect(await readiness.evaluate()).toEqual({ ready: true, failures: {} });
    readiness.register('down', async () => {
      throw new Error('connection refused');
    });
    readiness.register('slow', () => new Promise(() => undefined));
    expect(await readiness.evaluate(50)).toEqual({
      ready: false,
      failures: { down: 'connection refused', slow: 'timed out after 50 ms' },
    });
  });
});
