import 'reflect-metadata';
import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { API_ERRORS, type ApiErrors } from './api-errors';
import { ObservabilityModule } from './observability.module';
import { lifecycleOf, runHttpService, runWorkerService, serviceModule } from './service';

const CONFIG = Symbol('CONFIG');
const TARGET = Symbol('TARGET');
const ERRORS: ApiErrors = { encode: (status, message) => JSON.stringify({ error: message, status }), methods: ['GET'] };

@Module({})
class RootModule {}

/** The JSON lines written to stdout and stderr while `run` runs, and whether it asked the process to exit (not exiting). */
async function captured(run: () => Promise<unknown>): Promise<{ lines: Array<Record<string, unknown>>; exits: unknown[] }> {
  const lines: Array<Record<string, unknown>> = [];
  const exits: unknown[] = [];
  const spies = [
    ...(['stdout', 'stderr'] as const).map((stream) =>
      jest.spyOn(process[stream], 'write').mockImplementation((chunk: string | Uint8Array) => {
        for (const raw of String(chunk).split('\n').filter((l) => l !== '')) lines.push(JSON.parse(raw) as Record<string, unknown>);
        return true;
      }),
    ),
    jest.spyOn(process, 'exit').mockImplementation(((code?: number) => void exits.push(code)) as typeof process.exit),
  ];
  try {
    await run();
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
  return { lines, exits };
}

describe('serviceModule', () => {
  it('imports ObservabilityModule first, provides the configuration and the API errors, then the service’s own', () => {
    const own = { provide: 'own', useValue: 1 };
    expect(serviceModule(RootModule, { config: { token: CONFIG, value: { a: 1 } }, errors: ERRORS, imports: [RootModule], providers: [own] })).toEqual({
      module: RootModule,
      imports: [ObservabilityModule, RootModule],
      providers: [{ provide: CONFIG, useValue: { a: 1 } }, { provide: API_ERRORS, useValue: ERRORS }, own],
    });
  });

  it('provides no API errors to a worker', () => {
    expect(serviceModule(RootModule, { config: { token: CONFIG, value: 2 }, providers: [] })).toEqual({
      module: RootModule,
      imports: [ObservabilityModule],
      providers: [{ provide: CONFIG, useValue: 2 }],
    });
  });
});

describe('lifecycleOf', () => {
  it('starts its target when the module initialises and closes it at shutdown', async () => {
    const calls: string[] = [];
    const target = { start: () => void calls.push('start'), close: async () => void calls.push('close') };
    const app = await NestFactory.createApplicationContext(
      { module: RootModule, providers: [{ provide: TARGET, useValue: target }, lifecycleOf(TARGET), lifecycleOf('other'), { provide: 'other', useValue: target }] },
      { logger: false },
    );
    expect(calls).toEqual(['start', 'start']);
    await app.close();
    expect(calls).toEqual(['start', 'start', 'close', 'close']);
  });
});

describe('runHttpService and runWorkerService', () => {
  it('log service.failed with the configuration error and exit 1 when the configuration does not load', async () => {
    const { lines, exits } = await captured(() =>
      runHttpService(
        'demo-gateway',
        () => {
          throw Object.assign(new Error('invalid configuration: PORT'), { code: 'EDEMO' });
        },
        () => serviceModule(RootModule, { config: { token: CONFIG, value: 0 }, errors: ERRORS, providers: [] }),
      ),
    );
    expect(exits).toEqual([1]);
    expect(lines).toEqual([
      expect.objectContaining({ level: 'fatal', context: 'demo-gateway', message: { event: 'service.failed', error: { message: 'invalid configuration: PORT', code: 'EDEMO' }, text: 'demo-gateway failed to start' } }),
    ]);
  });

  it('exit 1 when the service does not start (a root module without ObservabilityModule)', async () => {
    const service = { service: 'demo-worker', host: '127.0.0.1', managementPort: 0, logLevel: 'fatal' as const };
    const { lines, exits } = await captured(() => runWorkerService('demo-worker', () => ({ service }), () => ({ module: RootModule })));
    expect(exits).toEqual([1]);
    expect(lines.at(-1)).toMatchObject({ level: 'fatal', context: 'demo-worker', message: { event: 'service.failed' } });
  });

  it('start the service from the loaded configuration and hand it back', async () => {
    const service = { service: 'demo-worker', host: '127.0.0.1', managementPort: 0, logLevel: 'fatal' as const };
    const worker = await runWorkerService('demo-worker', () => ({ service }), () => serviceModule(RootModule, { config: { token: CONFIG, value: service }, providers: [] }));
    try {
      expect(worker?.app.get(CONFIG)).toBe(service);
      expect((await fetch(`${worker?.managementUrl}/healthz`)).status).toBe(200);
    } finally {
      await worker?.close();
    }
    const http = { service: 'demo-gateway', host: '127.0.0.1', port: 0, managementPort: 0, bodyLimitBytes: 1024, logLevel: 'fatal' as const };
    const gateway = await runHttpService('demo-gateway', () => ({ http }), () => serviceModule(RootModule, { config: { token: CONFIG, value: http }, errors: ERRORS, providers: [] }));
    try {
      const answer = await fetch(`${gateway?.url}/nothing`);
      expect(answer.status).toBe(404);
    } finally {
      await gateway?.close();
    }
  });
});
