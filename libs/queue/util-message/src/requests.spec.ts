import { QueueError } from './errors';
import { bulkParameters, headerRecord, parseBatch, parseCancelRequest, parseDlqPage, parseEventsPage, parseListFilter, pathId, publishDestination, queryValues } from './requests';

const context = { nowMs: 1_700_000_000_000, callerIp: '203.0.113.9', retries: { default: 3, max: 5 } };

function refusal(run: () => unknown): QueueError {
  try {
    run();
  } catch (error) {
    if (error instanceof QueueError) return error;
    throw error;
  }
  throw new Error('expected a QueueError');
}

describe('pathId', () => {
  it('percent-decodes one id, and refuses a deeper path (404) or a malformed escape (400)', () => {
    expect(pathId('msg%5F1')).toBe('msg_1');
    expect(refusal(() => pathId('a/b')).status).toBe(404);
    expect(refusal(() => pathId('%E0%A4%A')).status).toBe(400);
  });
});

describe('publishDestination', () => {
  it('keeps the raw remainder and the request query, less qstash_token', () => {
    const dest = 'https://example.com//hook';
    expect(publishDestination(dest, `/v2/publish/${dest}`, new URLSearchParams())).toBe(dest);
    expect(publishDestination(dest, `/v2/publish/${dest}?a=1&b=%20`, new URLSearchParams('a=1&b=%20'))).toBe(`${dest}?a=1&b=%20`);
    expect(publishDestination(dest, `/v2/publish/${dest}?`, new URLSearchParams(''))).toBe(`${dest}?`);
    expect(publishDestination(dest, `/v2/publish/${dest}?a=1&qstash_token=t`, new URLSearchParams('a=1&qstash_token=t'))).toBe(`${dest}?a=1`);
    expect(publishDestination(dest, `/v2/publish/${dest}?qstash_token=t`, new URLSearchParams('qstash_token=t'))).toBe(dest);
  });
});

describe('headerRecord', () => {
  it('lower-cases names, gathers repeated ones, and keeps a header named __proto__', () => {
    const headers = headerRecord(['Content-Type', 'text/plain', 'Upstash-Forward-A', '1', 'upstash-forward-a', '2', '__proto__', 'x']);
    expect(headers['content-type']).toBe('text/plain');
    expect(headers['upstash-forward-a']).toEqual(['1', '2']);
    expect(Object.hasOwn(headers, '__proto__')).toBe(true);
  });
});

describe('parseBatch', () => {
  it('parses every message, with its headers and body, before any is published', () => {
    const body = Buffer.from(JSON.stringify([{ destination: 'https://example.com/a', headers: { 'Upstash-Delay': '10s' }, body: 'hi' }, { destination: 'https://example.com/b' }]));
    const parsed = parseBatch(body, context);
    expect(parsed.map((p) => p.message.url)).toEqual(['https://example.com/a', 'https://example.com/b']);
    expect(parsed[0]?.message.notBefore).toBe(context.nowMs + 10_000);
    expect(Buffer.from(parsed[0]?.message.body ?? '', 'base64').toString()).toBe('hi');
  });

  it('enqueues an item with a queue to it', () => {
    const [parsed] = parseBatch(Buffer.from('[{"destination":"https://e.com","queue":"orders"}]'), context);
    expect(parsed?.message.queueName).toBe('orders');
  });

  it('refuses what is not a non-empty array of messages, naming the item', () => {
    expect(refusal(() => parseBatch(Buffer.from('{'), context)).message).toBe('the batch body must be a JSON array of messages');
    expect(refusal(() => parseBatch(Buffer.from('[]'), context)).message).toBe('the batch body must be a non-empty JSON array of messages');
    expect(refusal(() => parseBatch(Buffer.from('[1]'), context)).message).toBe('batch item 0 must be an object');
    expect(refusal(() => parseBatch(Buffer.from('[{"destination":""}]'), context)).message).toBe('batch item 0: destination must be a URL');
    expect(refusal(() => parseBatch(Buffer.from('[{"destination":"https://e.com","queue":"a b"}]'), context)).message).toContain('batch item 0 queue');
    expect(refusal(() => parseBatch(Buffer.from('[{"destination":"https://e.com","body":1}]'), context)).message).toBe('batch item 0: body must be a string');
  });
});

describe('list queries', () => {
  it('reads values repeated or comma-joined', () => {
    expect(queryValues(new URLSearchParams('messageIds=a,b&messageIds= c '), 'messageIds')).toEqual(['a', 'b', 'c']);
    expect(queryValues(new URLSearchParams('messageIds=,'), 'messageIds')).toBeUndefined();
  });

  it('parses the filter, and refuses a date that is no non-negative integer', () => {
    const filter = parseListFilter(new URLSearchParams('url=https://e.com&state=DELIVERED,ERROR&responseStatus=200&fromDate=5&toDate=9'));
    expect(filter).toEqual({ url: ['https://e.com'], state: ['DELIVERED', 'ERROR'], responseStatus: [200], fromDate: 5, toDate: 9 });
    expect(refusal(() => parseListFilter(new URLSearchParams('fromDate=-1'))).message).toBe('fromDate must be a non-negative integer, got -1');
  });

  it('pages with count 100 by default and at most 1000, a cursor, and DLQ ids or event message ids', () => {
    expect(parseDlqPage(new URLSearchParams('count=5000&cursor=c1&dlqIds=d1,d2'))).toEqual({ count: 1000, filter: {}, cursor: 'c1', dlqIds: ['d1', 'd2'] });
    expect(parseEventsPage(new URLSearchParams('messageIds=m1'))).toEqual({ count: 100, filter: { messageId: ['m1'] } });
    // The DLQ's count is checked before its filter, the events' filter before their count (as the endpoints always did).
    expect(refusal(() => parseDlqPage(new URLSearchParams('count=x&toDate=y'))).message).toMatch(/^count/);
    expect(refusal(() => parseEventsPage(new URLSearchParams('count=x&toDate=y'))).message).toMatch(/^toDate/);
  });
});

describe('bulkParameters', () => {
  const body = (value: unknown) => Buffer.from(JSON.stringify(value));

  it('adds the keys of a JSON body to the query, as earlier SDKs send their bulk filters', () => {
    // messages.deleteMany(ids) of earlier @upstash/qstash releases, and qstash-py's cancel_many.
    expect(parseCancelRequest(bulkParameters(new URLSearchParams(), body({ messageIds: ['m1', 'm2'] })))).toEqual({ messageIds: ['m1', 'm2'] });
    // messages.delete({flowControlKey, fromDate}) with the dates as numbers; the query keeps its own values.
    expect(parseCancelRequest(bulkParameters(new URLSearchParams('label=q'), body({ flowControlKey: 'k', fromDate: 5, topicName: 'g' })))).toEqual({
      filter: { label: ['q'], flowControlKey: ['k'], topicName: ['g'], fromDate: 5 },
    });
    // dlq.delete({all: true}) sends {}; null values are left out.
    expect(parseDlqPage(bulkParameters(new URLSearchParams(), body({ all: true, label: null })))).toEqual({ count: 100, filter: {} });
    expect(parseDlqPage(bulkParameters(new URLSearchParams(), body({ dlqIds: ['d1'], responseStatus: 500 })))).toEqual({ count: 100, filter: { responseStatus: [500] }, dlqIds: ['d1'] });
  });

  it('leaves the query alone for an empty body, and refuses a body that is no object of scalars (400)', () => {
    const query = new URLSearchParams('label=a');
    expect(bulkParameters(query, Buffer.alloc(0))).toBe(query);
    expect(bulkParameters(query, Buffer.from(' null '))).toBe(query);
    for (const bad of ['[1]', '"x"', '{', '{"label": {"a": 1}}', '{"messageIds": [["m"]]}']) {
      const error = refusal(() => bulkParameters(query, Buffer.from(bad)));
      expect([bad, error.status]).toEqual([bad, 400]);
    }
    expect(refusal(() => bulkParameters(query, body({ label: { a: 1 } }))).message).toMatch(/^invalid label/);
  });
});
