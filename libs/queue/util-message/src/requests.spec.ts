import { bulkParameters, parseCancelRequest, parseDlqBulk } from './bulk-requests';
import { parseDlqPage, parseEventsPage, parseListFilter, queryValues } from './list-requests';
import { headerRecord, parseBatch, pathId, publishDestination } from './requests';
import { refusal } from './testing/bad-request';

const context = { nowMs: 1_700_000_000_000, callerIp: '203.0.113.9', retries: { default: 3, max: 5 } };

describe('pathId', () => {
  it('percent-decodes one id, and refuses a deeper path (404) or a malformed escape (400)', () => {
    expect(pathId('msg%5F1')).toBe('msg_1');
    expect(refusal(() => pathId('a/b')).status).toBe(404);
    expect(refusal(() => pathId('%E0%A4%A')).status).toBe(400);
  });

  it('refuses an empty id (a path ending with "/"), naming what is missing (400)', () => {
    const error = refusal(() => pathId('', 'message id'));
    expect([error.status, error.message]).toEqual([400, 'the message id is missing from the path (it ends with "/")']);
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

  it("reads the queue's own header values as UTF-8 and keeps the forwarded ones' bytes", () => {
    // What Node's parser hands over for UTF-8 bytes on the wire: one Latin-1 character per byte.
    const wire = (text: string) => Buffer.from(text, 'utf8').toString('latin1');
    const headers = headerRecord([
      'Upstash-Flow-Control-Key', wire('ü'),
      'Upstash-Label', wire('١٠s,étiquette'),
      'Upstash-Callback', wire('https://example.com/é'),
      'Upstash-Forward-X-Name', wire('ü'),
      'Upstash-Callback-Forward-X-Name', wire('ü'),
      'Upstash-Failure-Callback-Forward-X-Name', wire('ü'),
      'Content-Type', wire('text/plain; name=ü'),
    ]);
    expect(headers['upstash-flow-control-key']).toBe('ü');
    expect(headers['upstash-label']).toBe('١٠s,étiquette');
    expect(headers['upstash-callback']).toBe('https://example.com/é');
    for (const name of ['upstash-forward-x-name', 'upstash-callback-forward-x-name', 'upstash-failure-callback-forward-x-name']) expect(headers[name]).toBe(wire('ü'));
    expect(headers['content-type']).toBe(wire('text/plain; name=ü'));
  });

  it("keeps a value whose bytes are no UTF-8: Node's fetch (the SDK) sends ü as the one byte 0xFC", () => {
    expect(headerRecord(['Upstash-Flow-Control-Key', '\u00fc'])['upstash-flow-control-key']).toBe('ü');
    expect(headerRecord(['Upstash-Label', 'plain'])['upstash-label']).toBe('plain');
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
    // null means absent (qstash-py); any other body that is no string is refused.
    const nulls = parseBatch(Buffer.from('[{"destination":"https://e.com","headers":null,"body":null,"queue":null}]'), context)[0];
    expect(nulls?.message.body).toBe('');
    expect(nulls?.message.queueName).toBeUndefined();
    expect(refusal(() => parseBatch(Buffer.from('[{"destination":"https://e.com","body":1}]'), context)).message).toBe('batch item 0: body must be a string');
  });

  it('refuses a destination holding CR/LF (which URL parsing drops) before anything is published', () => {
    const batch = JSON.stringify([{ destination: 'https://e.com/ok', headers: {} }, { destination: 'http://127.0.0.1:19400/crlf4\r\nX: y', headers: {}, body: 'b' }]);
    const error = refusal(() => parseBatch(Buffer.from(batch), context));
    expect([error.status, error.message]).toEqual([400, expect.stringMatching(/^invalid destination url: .*control characters/)]);
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
    expect(parseDlqPage(new URLSearchParams('count=5000&cursor=1700000000000:1700000000000-abc_cb0&dlqIds=d1,d2'))).toEqual({
      count: 1000,
      filter: {},
      cursor: '1700000000000:1700000000000-abc_cb0',
      dlqIds: ['d1', 'd2'],
    });
    expect(parseEventsPage(new URLSearchParams('messageIds=m1'))).toEqual({ count: 100, filter: { messageId: ['m1'] } });
    // The DLQ's count is checked before its filter, the events' filter before their count (as the endpoints always did).
    expect(refusal(() => parseDlqPage(new URLSearchParams('count=x&toDate=y'))).message).toMatch(/^invalid count/);
    expect(refusal(() => parseEventsPage(new URLSearchParams('count=x&toDate=y'))).message).toMatch(/^toDate/);
  });

  it('refuses a count below 1 or no whole number (400 naming count), which would read as an empty last page', () => {
    for (const count of ['0', '-1', '1.5', 'x', '1e3']) {
      for (const parse of [parseEventsPage, parseDlqPage]) {
        const error = refusal(() => parse(new URLSearchParams({ count })));
        expect([count, error.status, error.message]).toEqual([count, 400, expect.stringMatching(/^invalid count: .*from 1 to 1000/)]);
      }
    }
    expect(parseEventsPage(new URLSearchParams('count=1')).count).toBe(1);
    expect(parseEventsPage(new URLSearchParams('count=')).count).toBe(100);
  });

  it('takes every events cursor form handed out or documented, and refuses others (400 naming cursor)', () => {
    // Ours (ms * 1000 + seq), a stream id (earlier versions), a Unix time in ms (the SDK's Date.now()), 0.
    for (const cursor of ['1763942400000007', '1763942400000-7', '1763942400000-1500', '1763942400000', '0']) {
      expect(parseEventsPage(new URLSearchParams({ cursor })).cursor).toBe(cursor);
    }
    expect(parseEventsPage(new URLSearchParams('cursor=')).cursor).toBeUndefined();
    for (const cursor of ['abc', '-1', '1.5', ' 5', '99999999999999999999', '9007199254740993', '1-2-3', '18446744073709551616-0', '1:2']) {
      const error = refusal(() => parseEventsPage(new URLSearchParams({ cursor })));
      expect([cursor, error.status, error.message]).toEqual([cursor, 400, expect.stringMatching(/^invalid cursor/)]);
    }
  });

  it('takes both DLQ cursor forms (<failedAt>:<dlqId>, and the position of earlier versions), and refuses others (400 naming cursor)', () => {
    for (const cursor of ['1763942400000:1763942300000-0123abcd_fcb', '0', '200']) expect(parseDlqPage(new URLSearchParams({ cursor })).cursor).toBe(cursor);
    for (const cursor of ['garbage', '1:2:3', '-1', '1:', ':x', '1:a b', '99999999999999999']) {
      const error = refusal(() => parseDlqPage(new URLSearchParams({ cursor })));
      expect([cursor, error.status, error.message]).toEqual([cursor, 400, expect.stringMatching(/^invalid cursor/)]);
    }
  });
});

describe('bulk requests (DELETE /v2/messages, DELETE /v2/dlq, POST /v2/dlq/retry)', () => {
  const json = (value: unknown) => Buffer.from(JSON.stringify(value));
  const cancel = (query: string, body: Buffer = Buffer.alloc(0)) => parseCancelRequest(bulkParameters(new URLSearchParams(query), body));
  const dlq = (query: string, body: Buffer = Buffer.alloc(0)) => parseDlqBulk(bulkParameters(new URLSearchParams(query), body));
  /** The 400 of a bulk call: its error text. */
  const refused = (run: () => unknown) => {
    const error = refusal(run);
    expect(error.status).toBe(400);
    return error.message;
  };

  it('acts on everything only when asked: no parameters (deleteAll), count/cursor alone (2.10+ all: true), or all=true', () => {
    for (const query of ['', 'count=100', 'count=100&cursor=1763942400000:x', 'all=true', 'all=TRUE&count=5', 'qstash_token=t', 'all=true&order=latestFirst']) {
      expect([query, cancel(query)]).toEqual([query, { filter: {} }]);
    }
    // What no SDK sends does not widen a call to every message: order alone, a cursor no page handed out.
    expect(refused(() => cancel('order=latestFirst'))).toMatch(/^order names no message/);
    expect(refused(() => dlq('order=earliestFirst'))).toMatch(/^order names no message/);
    for (const cursor of ['abc', '-1']) expect(refused(() => cancel(`cursor=${cursor}`))).toMatch(/^invalid cursor/);
    expect(cancel('', json({ all: true }))).toEqual({ filter: {} });
    expect(dlq('count=2')).toEqual({ count: 2, filter: {} });
    expect(dlq('', json({ all: true, count: 3 }))).toEqual({ count: 3, filter: {} });
  });

  it('reads ids and filters from the query and from a JSON body (2.4 to 2.9 and qstash-py send them so)', () => {
    expect(cancel('', json({ messageIds: ['m1', 'm2'] }))).toEqual({ messageIds: ['m1', 'm2'] });
    expect(cancel('label=q', json({ flowControlKey: 'k', fromDate: 5, topicName: 'g' }))).toEqual({
      filter: { label: ['q'], flowControlKey: ['k'], topicName: ['g'], fromDate: 5 },
    });
    expect(cancel('all=false&label=q')).toEqual({ filter: { label: ['q'] } });
    expect(dlq('', json({ dlqIds: ['d1'] }))).toEqual({ count: 100, filter: {}, dlqIds: ['d1'] });
    expect(dlq('dlqIds=d1,d2&cursor=')).toEqual({ count: 100, filter: {}, dlqIds: ['d1', 'd2'] });
    expect(dlq('responseStatus=500&messageId=m&urlGroup=g&count=2')).toEqual({ count: 2, filter: { responseStatus: [500], messageId: ['m'], topicName: ['g'] } });
  });

  it('an empty id list names nothing: deleteMany([]) of 2.4 to 2.9 and qstash-py', () => {
    expect(cancel('', json({ messageIds: [] }))).toEqual({ messageIds: [] });
    expect(dlq('', json({ dlqIds: [] }))).toEqual({ count: 100, filter: {}, dlqIds: [] });
  });

  it('refuses an unknown parameter, naming it, rather than taking it for no filter', () => {
    expect(refused(() => cancel('lable=other'))).toMatch(/^unknown parameter "lable": a bulk cancel takes messageIds, url, host, path, label/);
    expect(refused(() => cancel('', json({ lable: 'other' })))).toMatch(/^unknown parameter "lable"/);
    expect(refused(() => dlq('responsestatus=500'))).toMatch(/^unknown parameter "responsestatus": a bulk DLQ call takes dlqIds/);
    expect(refused(() => dlq('messageIds=m1'))).toMatch(/^unknown parameter "messageIds"/);
    // Known but refused, as before.
    expect(refused(() => cancel('state=FAILED'))).toBe('a bulk cancel cannot be filtered by state');
    expect(refused(() => dlq('host=a'))).toBe('the DLQ cannot be filtered by host');
  });

  it('refuses an empty value or a null (what dlq.retry("") of 2.12 sends: dlqIds=), naming the parameter', () => {
    for (const query of ['label=', 'messageIds=', 'label=,', 'url=%20', 'fromDate=']) {
      const name = query.split('=')[0] as string;
      expect([query, refused(() => cancel(query))]).toEqual([query, `empty ${name}: give it a value, or leave ${name} out`]);
    }
    expect(refused(() => dlq('dlqIds='))).toBe('empty dlqIds: give it a value, or leave dlqIds out');
    expect(refused(() => cancel('', json({ messageIds: [''] })))).toBe('empty messageIds: give it a value, or leave messageIds out');
    expect(refused(() => cancel('', json({ label: [] })))).toBe('empty label: give it a value, or leave label out');
    expect(refused(() => cancel('', json({ label: null })))).toBe('invalid label: null (give a value, or leave label out)');
    expect(refused(() => dlq('', json({ dlqIds: null })))).toBe('invalid dlqIds: null (give a value, or leave dlqIds out)');
  });

  it('refuses all=false alone, all=true with ids or filters, an all that is no boolean, and a body naming nothing', () => {
    expect(refused(() => cancel('', json({ all: false })))).toBe('all=false names no message: send messageIds, a filter, or all=true');
    expect(refused(() => dlq('all=false&count=5'))).toBe('all=false names no message: send dlqIds, a filter, or all=true');
    expect(refused(() => cancel('all=true&label=x'))).toMatch(/^all=true acts on every message/);
    expect(refused(() => dlq('', json({ all: true, dlqIds: ['d1'] })))).toMatch(/^all=true acts on every message/);
    expect(refused(() => cancel('all=yes'))).toMatch(/^invalid all/);
    expect(refused(() => cancel('all=true&all=false'))).toMatch(/^invalid all/);
    expect(refused(() => cancel('order=sideways'))).toMatch(/^invalid order/);
    // deleteMany({dlqIds: undefined}) of 2.4 to 2.9 sends {}: no parameter named, yet not the bare "every message".
    expect(refused(() => dlq('', json({})))).toMatch(/^the body names nothing/);
  });

  it('checks the DLQ page: count from 1, a cursor of either DLQ form', () => {
    expect(refused(() => dlq('count=0'))).toMatch(/^invalid count/);
    expect(refused(() => dlq('cursor=1:2:3'))).toMatch(/^invalid cursor/);
    expect(dlq('cursor=40&label=x')).toEqual({ count: 100, cursor: '40', filter: { label: ['x'] } });
  });

  it('leaves the query alone for an empty body, and refuses a body that is no object of scalars (400)', () => {
    expect(bulkParameters(new URLSearchParams('label=a&qstash_token=t'), Buffer.alloc(0)).query.toString()).toBe('label=a');
    for (const bad of ['[1]', '"x"', '{', 'null', '{"label": {"a": 1}}', '{"messageIds": [["m"]]}']) {
      const error = refusal(() => bulkParameters(new URLSearchParams('label=a'), Buffer.from(bad)));
      expect([bad, error.status]).toEqual([bad, 400]);
    }
    expect(refusal(() => bulkParameters(new URLSearchParams(), json({ label: { a: 1 } }))).message).toMatch(/^invalid label/);
  });
});
