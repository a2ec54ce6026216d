import { Readiness } from './observability.module';

describe('Readiness', () => {
  it('is ready when every check passes, and names each failure otherwise', async () => {
    const readiness = new Readiness();
    readiness.register('ok', async () => 'fine');
    expect(await readiness.evaluate()).toEqual({ ready: true, failures: {}, degraded: {} });
    readiness.register('down', async () => {
      throw new Error('connection refused');
    });
    readiness.register('slow', () => new Promise(() => undefined));
    expect(await readiness.evaluate(50)).toEqual({
      ready: false,
      failures: { down: 'connection refused', slow: 'timed out after 50 ms' },
      degraded: {},
    });
  });

  it('reports a failing check that is not gating as degraded, and stays ready', async () => {
    const readiness = new Readiness();
    readiness.register('registry', () => Promise.reject(new Error('the tenant registry is missing')), false);
    expect(await readiness.evaluate()).toEqual({ ready: true, failures: {}, degraded: { registry: 'the tenant registry is missing' } });
  });
});
