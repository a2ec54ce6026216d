import { ConsoleLogger, Logger } from '@nestjs/common';
import { EventConsoleLogger, RepeatLimiter, engineErrorListener, errorFields, logEvent, routeConsole } from './log-event';

/** The lines a real JSON ConsoleLogger writes while `run` runs, parsed, with the stream each went to. */
function captured(run: () => void): Array<{ stream: 'stdout' | 'stderr'; raw: string; line: Record<string, unknown> }> {
  const lines: Array<{ stream: 'stdout' | 'stderr'; raw: string; line: Record<string, unknown> }> = [];
  const spies = (['stdout', 'stderr'] as const).map((stream) =>
    jest.spyOn(process[stream], 'write').mockImplementation((chunk: string | Uint8Array) => {
      for (const raw of String(chunk).split('\n').filter((l) => l !== '')) lines.push({ stream, raw, line: JSON.parse(raw) as Record<string, unknown> });
      return true;
    }),
  );
  try {
    run();
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
  return lines;
}

/** The one line `run` writes, which must go to `stream`. */
function oneLine(stream: 'stdout' | 'stderr', run: () => void): { raw: string; line: Record<string, unknown> } {
  const lines = captured(run);
  expect(lines.map((l) => l.stream)).toEqual([stream]);
  return lines[0] as { raw: string; line: Record<string, unknown> };
}

/** A line of a JSON ConsoleLogger of this process: its level, context and message. */
const jsonLine = (level: string, context: string, message: Record<string, unknown>) => ({ level, pid: process.pid, timestamp: expect.any(Number), context, message });

const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED', errno: -111, syscall: 'connect' });

describe('logEvent', () => {
  const json = () => new ConsoleLogger('TestService', { json: true });

  it('writes one JSON line whose message is the event with its fields, the error reduced to message and code', () => {
    const { line, raw } = oneLine('stdout', () => logEvent(json(), 'warn', 'engine.error', { engine: 'control-redis', tenant: 'acme', error: refused(), text: 'control Redis unreachable' }));
    expect(line).toEqual(
      jsonLine('warn', 'TestService', {
        event: 'engine.error',
        engine: 'control-redis',
        tenant: 'acme',
        error: { message: 'connect ECONNREFUSED 127.0.0.1:6379', code: 'ECONNREFUSED' },
        text: 'control Redis unreachable',
      }),
    );
    expect(raw).not.toMatch(/\bat .+:\d+:\d+/); // no stack frame anywhere
  });

  it('writes errors to stderr with no stack field, through a Nest Logger with a context as the services use it', () => {
    Logger.overrideLogger(json());
    try {
      const { line } = oneLine('stderr', () => logEvent(new Logger('TenancyModule'), 'error', 'registry.unreadable', { key: 'restash:v1:token:x', error: new TypeError('bad seal') }));
      expect(line).toEqual(jsonLine('error', 'TenancyModule', { event: 'registry.unreadable', key: 'restash:v1:token:x', error: { message: 'bad seal' } }));
    } finally {
      Logger.overrideLogger(new ConsoleLogger());
    }
  });

  it('logs a level the logger lacks as log', () => {
    const calls: unknown[] = [];
    logEvent({ log: (m: unknown) => calls.push(m), warn: () => undefined, error: () => undefined }, 'debug', 'consumer.closed', { group: 'g' });
    expect(calls).toEqual([{ event: 'consumer.closed', group: 'g' }]);
  });
});

describe('EventConsoleLogger', () => {
  it("makes Nest's own lines events and drops every stack", () => {
    const logger = new EventConsoleLogger('svc');
    const error = refused();
    const lines = captured(() => {
      logger.log('Starting Nest application...', 'NestFactory');
      logger.error('Nest could not find X', `Error: Nest could not find X\n    at Injector.lookup (/app/injector.js:1:2)`, 'ExceptionHandler');
      logger.error(error);
      logEvent(logger, 'warn', 'engine.error', { engine: 'kafka', error });
    });
    expect(lines.map((l) => [l.line['level'], l.line['context'], l.line['message'], 'stack' in l.line || 'error' in l.line])).toEqual([
      ['log', 'NestFactory', { event: 'nest.message', text: 'Starting Nest application...' }, false],
      ['error', 'ExceptionHandler', { event: 'nest.message', text: 'Nest could not find X' }, false],
      ['error', 'svc', { event: 'nest.error', error: { message: 'connect ECONNREFUSED 127.0.0.1:6379', code: 'ECONNREFUSED' } }, false],
      ['warn', 'svc', { event: 'engine.error', engine: 'kafka', error: { message: 'connect ECONNREFUSED 127.0.0.1:6379', code: 'ECONNREFUSED' } }, false],
    ]);
    expect(lines.map((l) => l.raw).join('\n')).not.toMatch(/\bat .+:\d+:\d+/);
  });
});

describe('errorFields', () => {
  it('reads the nested errors of an AggregateError with an empty message (a connect to every address of localhost)', () => {
    const aggregate = Object.assign(new AggregateError([refused(), Object.assign(new Error('connect ECONNREFUSED ::1:6379'), { code: 'ECONNREFUSED' })], ''), { code: 'ECONNREFUSED' });
    expect(errorFields(aggregate)).toEqual({ message: 'connect ECONNREFUSED 127.0.0.1:6379; connect ECONNREFUSED ::1:6379', code: 'ECONNREFUSED' });
  });

  it('appends the nested messages to a message of its own, and reads a non-Error as text', () => {
    expect(errorFields(new AggregateError([new Error('a'), new Error('a')], 'Cannot connect to any broker.'))).toEqual({ message: 'Cannot connect to any broker. (a)' });
    expect(errorFields('plain')).toEqual({ message: 'plain' });
  });
});

describe('RepeatLimiter and engineErrorListener', () => {
  const json = () => new ConsoleLogger('TestService', { json: true });

  it('lets one line per distinct error through per window, the next one counting the lines held back', () => {
    let now = 0;
    const limiter = new RepeatLimiter(10_000, () => now);
    const calls: unknown[] = [];
    const logger = { log: () => undefined, warn: (m: unknown) => calls.push(m), error: (m: unknown) => calls.push(m) };
    for (let i = 0; i < 5; i++) limiter.logEvent(logger, 'warn', 'engine.error', { engine: 'queue-redis', error: refused() });
    limiter.logEvent(logger, 'warn', 'engine.error', { engine: 'queue-redis', error: new Error('other') });
    limiter.logEvent(logger, 'warn', 'engine.error', { engine: 'control-redis', error: refused() });
    limiter.logEvent(logger, 'error', 'kv.server.refused', { tenant: 'acme', database: 'acme.a', reason: 'shared' });
    limiter.logEvent(logger, 'error', 'kv.server.refused', { tenant: 'acme', database: 'acme.b', reason: 'shared' });
    limiter.logEvent(logger, 'error', 'kv.server.refused', { tenant: 'acme', database: 'acme.b', reason: 'shared' });
    now = 10_000;
    limiter.logEvent(logger, 'warn', 'engine.error', { engine: 'queue-redis', error: refused() });
    expect(calls).toEqual([
      { event: 'engine.error', engine: 'queue-redis', error: { message: 'connect ECONNREFUSED 127.0.0.1:6379', code: 'ECONNREFUSED' } },
      { event: 'engine.error', engine: 'queue-redis', error: { message: 'other' } },
      { event: 'engine.error', engine: 'control-redis', error: { message: 'connect ECONNREFUSED 127.0.0.1:6379', code: 'ECONNREFUSED' } },
      { event: 'kv.server.refused', tenant: 'acme', database: 'acme.a', reason: 'shared' },
      { event: 'kv.server.refused', tenant: 'acme', database: 'acme.b', reason: 'shared' },
      { event: 'engine.error', engine: 'queue-redis', repeated: 4, error: { message: 'connect ECONNREFUSED 127.0.0.1:6379', code: 'ECONNREFUSED' } },
    ]);
  });

  it('reports one outage once across the listeners of one engine (a connection, its duplicates, the queues on it)', () => {
    const calls: unknown[] = [];
    const logger = { log: () => undefined, warn: (m: unknown) => calls.push(m), error: () => undefined };
    const connection = engineErrorListener(logger, 'embedder');
    const queue = engineErrorListener(logger, 'embedder', { queue: 'deliveries' });
    connection(new Error('gone'));
    queue(new Error('gone'));
    queue(new Error('another'));
    expect(calls).toEqual([
      { event: 'engine.error', engine: 'embedder', error: { message: 'gone' } },
      { event: 'engine.error', engine: 'embedder', queue: 'deliveries', error: { message: 'another' } },
    ]);
  });

  it('gives an error listener that logs engine.error at warn with the engine and fields', () => {
    const lines = captured(() => {
      const listener = engineErrorListener(json(), 'kafka', { tenant: 'acme', cluster: 'acme-main' });
      listener(refused());
      listener(refused());
    });
    expect(lines.map((l) => l.line['message'])).toEqual([
      { event: 'engine.error', engine: 'kafka', tenant: 'acme', cluster: 'acme-main', error: { message: 'connect ECONNREFUSED 127.0.0.1:6379', code: 'ECONNREFUSED' } },
    ]);
  });
});

describe('routeConsole', () => {
  it('turns console output into console.output events without stacks until restored', () => {
    const original = console.warn;
    const lines = captured(() => {
      const restore = routeConsole(new ConsoleLogger('TestService', { json: true }));
      try {
        console.warn('IMPORTANT! Eviction policy is %s. It should be "noeviction"', 'allkeys-lru');
        console.error(refused());
      } finally {
        restore();
      }
    });
    expect(console.warn).toBe(original);
    expect(lines.map((l) => [l.stream, l.line['level'], l.line['message']])).toEqual([
      ['stdout', 'warn', { event: 'console.output', text: 'IMPORTANT! Eviction policy is allkeys-lru. It should be "noeviction"' }],
      ['stderr', 'error', { event: 'console.output', text: 'Error: connect ECONNREFUSED 127.0.0.1:6379' }],
    ]);
  });
});
