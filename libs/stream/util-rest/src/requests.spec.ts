import { StreamError } from './errors';
import {
  MAX_TIMEOUT_MS,
  parseCommit,
  parseConsume,
  parseConsumerConfig,
  parseFetch,
  parseGroupId,
  parseJson,
  parseOffsetsAt,
  parseProduce,
  parseTimeoutQuery,
  parseTopicPartitions,
} from './requests';

function badRequest(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(StreamError);
    expect((error as StreamError).status).toBe(400);
    return (error as StreamError).message;
  }
  throw new Error('expected a 400');
}

describe('parseJson', () => {
  it('is undefined for no body and a 400 for text that is not JSON', () => {
    expect(parseJson(undefined)).toBeUndefined();
    expect(parseJson(Buffer.from('  '))).toBeUndefined();
    expect(parseJson(Buffer.from('[1]'))).toEqual([1]);
    expect(badRequest(() => parseJson(Buffer.from('{')))).toMatch(/not valid JSON/);
  });
});

describe('parseProduce', () => {
  it('takes one message or an array, with every optional field', () => {
    expect(parseProduce({ topic: 't', value: 'v' })).toEqual([{ topic: 't', value: 'v', headers: [] }]);
    expect(
      parseProduce([{ topic: 't', value: 'v', partition: '2', timestamp: 1_700_000_000_000, key: 'k', headers: [{ key: 'a', value: 'b' }] }]),
    ).toEqual([{ topic: 't', value: 'v', partition: 2, timestamp: 1_700_000_000_000, key: 'k', headers: [{ key: 'a', value: 'b' }] }]);
  });

  it('refuses a timestamp more than an hour in the future (the broker would refuse the batch), in every message of a batch', () => {
    const now = 1_700_000_000_000;
    const hour = 60 * 60 * 1000;
    expect(parseProduce({ topic: 't', value: 'v', timestamp: now + hour }, undefined, now)[0]?.timestamp).toBe(now + hour);
    expect(parseProduce({ topic: 't', value: 'v', timestamp: 0 }, undefined, now)[0]?.timestamp).toBe(0);
    expect(badRequest(() => parseProduce({ topic: 't', value: 'v', timestamp: now + hour + 1 }, undefined, now))).toMatch(
      /^Illegal argument: message\.timestamp \d+ is more than an hour in the future/,
    );
    const batch = [{ topic: 't', value: 'a' }, { topic: 't', value: 'b', timestamp: String(now + 2 * hour) }];
    expect(badRequest(() => parseProduce(batch, undefined, now))).toMatch(/message\[1\]\.timestamp .* in the future/);
    expect(badRequest(() => parseProduce([{ value: 'a', timestamp: 9e18 }], 'path', now))).toMatch(/message\[0\]\.timestamp/);
    expect(badRequest(() => parseProduce({ topic: 't', value: 'v', timestamp: -1 }, undefined, now))).toMatch(/message\.timestamp must be an integer/);
  });

  it('takes the topic from the path when one is given', () => {
    expect(parseProduce([{ value: 'a' }, { topic: 'ignored', value: 'b' }], 'path')).toEqual([
      { topic: 'path', value: 'a', headers: [] },
      { topic: 'path', value: 'b', headers: [] },
    ]);
  });

  it('names the field of each mistake', () => {
    expect(badRequest(() => parseProduce(undefined))).toMatch(/a message or an array/);
    expect(badRequest(() => parseProduce([]))).toMatch(/no messages/);
    expect(badRequest(() => parseProduce({ value: 'v' }))).toMatch(/message\.topic must be a string/);
    expect(badRequest(() => parseProduce([{ topic: 't', value: 'v' }, { topic: 't' }]))).toMatch(/message\[1\]\.value is required/);
    expect(badRequest(() => parseProduce({ topic: 't', value: { a: 1 } }))).toMatch(/value must be a string/);
    expect(badRequest(() => parseProduce({ topic: 't', value: 'v', partition: -1 }))).toMatch(/partition must be an integer/);
    expect(badRequest(() => parseProduce({ topic: 't', value: 'v', partition: 1.5 }))).toMatch(/partition/);
    expect(badRequest(() => parseProduce({ topic: 't', value: 'v', key: 3 }))).toMatch(/key must be a string/);
    expect(badRequest(() => parseProduce({ topic: 't', value: 'v', headers: [{ key: 'a' }] }))).toMatch(/headers\[0\]\.value/);
    expect(badRequest(() => parseProduce('text'))).toMatch(/expected a message/);
    expect(badRequest(() => parseProduce({ topic: '', value: 'v' }))).toMatch(/must not be empty/);
  });
});

describe('parseFetch', () => {
  it('combines the single partition with topicPartitionOffsets and defaults the timeout to 1000 ms', () => {
    expect(
      parseFetch({ topic: 'a', partition: 0, offset: 5, topicPartitionOffsets: [{ topic: 'b', partition: 1, offset: '7' }] }),
    ).toEqual({
      partitions: [
        { topic: 'b', partition: 1, offset: 7 },
        { topic: 'a', partition: 0, offset: 5 },
      ],
      timeoutMs: 1000,
    });
  });

  it('caps long timeouts and refuses requests naming nothing', () => {
    expect(parseFetch({ topic: 'a', partition: 0, offset: 0, timeout: 10 ** 9 }).timeoutMs).toBe(MAX_TIMEOUT_MS);
    expect(badRequest(() => parseFetch(undefined))).toMatch(/give topic, partition and offset/);
    expect(badRequest(() => parseFetch({ topic: 'a', partition: 0 }))).toMatch(/offset must be an integer/);
    expect(badRequest(() => parseFetch({ topicPartitionOffsets: {} }))).toMatch(/must be an array/);
    expect(badRequest(() => parseFetch({ topic: 'a', partition: 0, offset: 0, timeout: -1 }))).toMatch(/timeout/);
  });
});

describe('parseConsume', () => {
  it('reads topic or topics from the body, or the topic and timeout of the GET form', () => {
    expect(parseConsume({ topic: 'a' })).toEqual({ topics: ['a'], timeoutMs: 1000 });
    expect(parseConsume({ topics: ['a', 'b', 'a'], timeout: 50 })).toEqual({ topics: ['a', 'b'], timeoutMs: 50 });
    expect(parseConsume(undefined, 'a', new URLSearchParams('timeout=20'))).toEqual({ topics: ['a'], timeoutMs: 20 });
    expect(parseConsume({ topic: 'a' }, undefined, new URLSearchParams('timeout=30'))).toEqual({ topics: ['a'], timeoutMs: 30 });
    expect(badRequest(() => parseConsume({}))).toMatch(/give topic or topics/);
    expect(badRequest(() => parseConsume({ topics: 'a' }))).toMatch(/topics must be an array/);
  });
});

describe('parseTopicPartitions and parseCommit', () => {
  it('take one entry or an array; an empty commit means the last consumed', () => {
    expect(parseTopicPartitions({ topic: 'a', partition: 0 })).toEqual([{ topic: 'a', partition: 0 }]);
    expect(parseTopicPartitions([{ topic: 'a', partition: 0 }, { topic: 'b', partition: 3 }])).toHaveLength(2);
    expect(badRequest(() => parseTopicPartitions(undefined))).toMatch(/is required/);
    expect(badRequest(() => parseTopicPartitions([]))).toMatch(/no topic partitions/);
    expect(parseCommit(undefined)).toEqual([]);
    expect(parseCommit([])).toEqual([]);
    expect(parseCommit({ topic: 'a', partition: 0, offset: 9 })).toEqual([{ topic: 'a', partition: 0, offset: 9 }]);
    expect(badRequest(() => parseCommit([{ topic: 'a', partition: 0 }]))).toMatch(/offsets\[0\]\.offset/);
  });
});

describe('parseOffsetsAt and parseTimeoutQuery', () => {
  it('read earliest, latest or a millisecond timestamp, and the timeout query', () => {
    expect(parseOffsetsAt('earliest')).toBe('earliest');
    expect(parseOffsetsAt('latest')).toBe('latest');
    expect(parseOffsetsAt('1700000000000')).toEqual({ timestamp: 1_700_000_000_000 });
    expect(badRequest(() => parseOffsetsAt('-5'))).toMatch(/timestamp/);
    expect(parseTimeoutQuery(new URLSearchParams(''), 10_000)).toBe(10_000);
    expect(parseTimeoutQuery(new URLSearchParams('timeout=250'), 10_000)).toBe(250);
    expect(badRequest(() => parseTimeoutQuery(new URLSearchParams('timeout=soon'), 1)).toString()).toMatch(/timeout/);
    expect(parseTimeoutQuery(new URLSearchParams('timeout=100'), 10_000)).toBe(100);
    expect(parseTimeoutQuery(new URLSearchParams('timeout=99999999'), 10_000)).toBe(MAX_TIMEOUT_MS);
    for (const bad of ['0', '99', '-1', '1.5', '1e3', '99999999999999999999']) {
      expect(badRequest(() => parseTimeoutQuery(new URLSearchParams(`timeout=${bad}`), 10_000))).toMatch(/^Illegal argument: timeout must be an integer from 100/);
    }
  });

  it('take 0 as the fetch and consume timeout (no wait)', () => {
    expect(parseFetch({ topic: 'a', partition: 0, offset: 0, timeout: 0 }).timeoutMs).toBe(0);
    expect(parseConsume(undefined, 'a', new URLSearchParams('timeout=0')).timeoutMs).toBe(0);
    expect(badRequest(() => parseConsume(undefined, 'a', new URLSearchParams('timeout=-5')))).toMatch(/timeout must be an integer/);
  });
});

describe('parseConsumerConfig', () => {
  it('has the documented defaults', () => {
    expect(parseConsumerConfig({})).toEqual({ autoCommit: true, autoCommitIntervalMs: 5000, autoOffsetReset: 'latest' });
  });

  it('reads the Stream- spelling and the Kafka- spelling, case-insensitively in value', () => {
    const stream = { 'stream-enable-auto-commit': 'FALSE', 'stream-auto-commit-interval': '250', 'stream-auto-offset-reset': 'Earliest' };
    const kafka = { 'kafka-enable-auto-commit': 'false', 'kafka-auto-commit-interval': '250', 'kafka-auto-offset-reset': 'earliest' };
    const expected = { autoCommit: false, autoCommitIntervalMs: 250, autoOffsetReset: 'earliest' };
    expect(parseConsumerConfig(stream)).toEqual(expected);
    expect(parseConsumerConfig(kafka)).toEqual(expected);
    expect(parseConsumerConfig({ 'kafka-auto-offset-reset': 'none' }).autoOffsetReset).toBe('none');
  });

  it('refuses values outside the documented ones', () => {
    expect(badRequest(() => parseConsumerConfig({ 'stream-enable-auto-commit': 'yes' }))).toMatch(/true or false/);
    expect(badRequest(() => parseConsumerConfig({ 'kafka-auto-commit-interval': '0' }))).toMatch(/Auto-Commit-Interval/);
    // Past 2^31-1 ms Node's timers fire after 1 ms.
    expect(parseConsumerConfig({ 'kafka-auto-commit-interval': String(2 ** 31 - 1) }).autoCommitIntervalMs).toBe(2 ** 31 - 1);
    expect(badRequest(() => parseConsumerConfig({ 'kafka-auto-commit-interval': String(2 ** 31) }))).toMatch(/Auto-Commit-Interval must be an integer from 1 to 2147483647/);
    expect(badRequest(() => parseConsumerConfig({ 'stream-auto-offset-reset': 'smallest' }))).toMatch(/earliest, latest or none/);
  });
});

describe('parseGroupId', () => {
  it('takes any non-empty text without whitespace, and refuses whitespace with 400 naming the rule', () => {
    for (const id of ['billing', 'a.b-c_d', 'ünï', 'a%b', '日本']) expect(parseGroupId(id)).toBe(id);
    for (const id of ['a b', 'tab\there', 'line\n', '\u00a0nbsp']) {
      expect(badRequest(() => parseGroupId(id))).toMatch(/consumer group id .* must not contain whitespace/);
    }
  });
});
