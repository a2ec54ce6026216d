import { inQueue, parseFlowControl, parsePeriod, parseQueueName } from './flow-control';
import { parsePublish } from './publish';
import { eventView, messageView } from './views';
import { callbackPayload } from './callback';
import { badRequest as messageOf400 } from './testing/bad-request';

const badRequest = (fn: () => unknown, fragment: string) => expect(messageOf400(fn)).toContain(fragment);

describe('parseFlowControl', () => {
  it('reads what the SDK sends (comma plus space, numeric period as <n>s)', () => {
    expect(parseFlowControl('k', 'parallelism=3, rate=5, period=1m')).toEqual({ key: 'k', parallelism: 3, rate: 5, periodS: 60 });
    expect(parseFlowControl('k', 'parallelism=3')).toEqual({ key: 'k', parallelism: 3 });
    expect(parseFlowControl('k', 'rate=10')).toEqual({ key: 'k', rate: 10, periodS: 1 });
    expect(parseFlowControl('k', 'rate=10, period=120s')).toEqual({ key: 'k', rate: 10, periodS: 120 });
    expect(parseFlowControl('k', 'Period=30,RATE=2')).toEqual({ key: 'k', rate: 2, periodS: 30 });
    expect(parseFlowControl('k', 'ratePerSecond=4')).toEqual({ key: 'k', rate: 4, periodS: 1 });
    expect(parseFlowControl('k', 'rate=1, period=7d')).toEqual({ key: 'k', rate: 1, periodS: 7 * 86_400 });
  });

  it('is absent without either header', () => {
    expect(parseFlowControl(undefined, undefined)).toBeUndefined();
  });

  it('refuses a key without a value and a value without a key, naming the header', () => {
    badRequest(() => parseFlowControl('k', undefined), 'Upstash-Flow-Control-Key');
    badRequest(() => parseFlowControl(undefined, 'parallelism=1'), 'Upstash-Flow-Control-Value');
    badRequest(() => parseFlowControl('k'.repeat(257), 'parallelism=1'), 'Upstash-Flow-Control-Key');
  });

  it('refuses bad parts, naming Upstash-Flow-Control-Value', () => {
    for (const value of [
      '',
      'period=1m',
      'parallelism=0',
      'parallelism=1001',
      'parallelism=1.5',
      'parallelism=-1',
      'rate=abc',
      'rate=0',
      'rate=1, period=8d',
      'rate=1, period=0s',
      'rate=1, period=1x',
      'burst=3',
      'parallelism=1, parallelism=2',
      'rate=1, ratePerSecond=2',
      'parallelism',
    ]) {
      badRequest(() => parseFlowControl('k', value || ' '), 'Upstash-Flow-Control-Value');
    }
  });

  it('is parsed by parsePublish into message.flowControl', () => {
    const parsed = parsePublish({
      destination: 'https://example.com/x',
      headers: { 'upstash-flow-control-key': 'tenant-api', 'upstash-flow-control-value': 'parallelism=2, rate=5, period=1m' },
      body: Buffer.alloc(0),
      nowMs: 1,
      callerIp: '127.0.0.1',
      retries: { default: 3, max: 5 },
    });
    expect(parsed.message.flowControl).toEqual({ key: 'tenant-api', parallelism: 2, rate: 5, periodS: 60 });
    badRequest(
      () =>
        parsePublish({
          destination: 'https://example.com/x',
          headers: { 'upstash-flow-control-key': 'tenant-api' },
          body: Buffer.alloc(0),
          nowMs: 1,
          callerIp: '127.0.0.1',
          retries: { default: 3, max: 5 },
        }),
      'Upstash-Flow-Control-Key',
    );
  });
});

describe('parsePeriod', () => {
  it('takes a duration or bare seconds from 1 s to 7 days', () => {
    expect(parsePeriod('90', 'period')).toBe(90);
    expect(parsePeriod('1h', 'period')).toBe(3600);
    badRequest(() => parsePeriod('0', 'period'), 'period');
    badRequest(() => parsePeriod(String(7 * 86_400 + 1), 'period'), 'period');
  });
});

describe('queue names', () => {
  it('accepts letters, digits, . _ - up to 128 characters', () => {
    expect(parseQueueName('upstash-queue_1.a', 'queueName')).toBe('upstash-queue_1.a');
    for (const bad of ['', 'a b', 'a/b', 'a:b', 'x'.repeat(129), 7, null]) badRequest(() => parseQueueName(bad, 'queueName'), 'queueName');
  });

  it('inQueue sets queueName, and refuses a flow-control key with a queue', () => {
    expect(inQueue({ message: {} as { queueName?: string } }, 'q1', 'queue').message.queueName).toBe('q1');
    badRequest(() => inQueue({ message: { flowControl: { key: 'k', parallelism: 1 } } }, 'q1', 'queue'), 'Upstash-Flow-Control-Key');
    badRequest(() => inQueue({ message: {} }, 'bad name', 'queue'), 'queue');
  });
});

describe('views of queue and flow-control messages', () => {
  const message = {
    messageId: 'msg_1',
    project: 'acme.main',
    url: 'https://example.com/x',
    method: 'POST' as const,
    header: {},
    body: '',
    maxRetries: 3,
    notBefore: 1,
    createdAt: 1,
    callerIp: '127.0.0.1',
  };

  it('messageView shows queueName, flowControlKey, parallelism, rate and period (seconds) when set', () => {
    expect(messageView({ ...message, queueName: 'orders' })).toMatchObject({ queueName: 'orders' });
    expect(messageView({ ...message, flowControl: { key: 'k', parallelism: 2, rate: 5, periodS: 60 } })).toMatchObject({ flowControlKey: 'k', parallelism: 2, rate: 5, period: 60 });
    const plain = messageView(message);
    for (const field of ['queueName', 'flowControlKey', 'parallelism', 'rate', 'period']) expect(plain).not.toHaveProperty(field);
  });

  it('eventView and the callback body carry queueName and flowControlKey', () => {
    expect(eventView({ time: 1, state: 'CREATED', messageId: 'msg_1', url: message.url, queueName: 'orders', flowControlKey: 'k' })).toMatchObject({ queueName: 'orders', flowControlKey: 'k' });
    const payload = callbackPayload({ ...message, queueName: 'orders', flowControl: { key: 'k', parallelism: 1 } }, { status: 200, header: {}, body: Buffer.from('ok') }, 0, 1024);
    expect(payload).toMatchObject({ queueName: 'orders', flowControlKey: 'k' });
  });
});
