import type { QueueMessage } from './message';
import { fanOut, isUrlGroupName, parseEndpointsBody, parseUrlGroupName, withEndpoints, withoutEndpoints } from './url-groups';
import { badRequest } from './testing/bad-request';

const body = (value: unknown) => Buffer.from(JSON.stringify(value));

describe('URL groups (pure)', () => {
  it('names are letters, digits, -, _ and . only', () => {
    for (const name of ['a', 'my-group', 'G_1.v2', 'x'.repeat(128)]) expect(isUrlGroupName(name)).toBe(true);
    for (const name of ['', 'a b', 'a/b', 'https://x', 'ä', 'x'.repeat(129), 'a:b']) expect(isUrlGroupName(name)).toBe(false);
    expect(badRequest(() => parseUrlGroupName('a b'))).toMatch(/^invalid url group name: "a b"/);
  });

  it('parses the endpoints body, naming the bad field', () => {
    expect(parseEndpointsBody(body({ endpoints: [{ url: 'https://a.example' }, { name: 'b', url: 'http://b.example/x' }] }), 'add')).toEqual([
      { url: 'https://a.example' },
      { name: 'b', url: 'http://b.example/x' },
    ]);
    expect(parseEndpointsBody(body({ endpoints: [{ name: 'b' }, { url: 'https://a.example' }] }), 'remove')).toEqual([{ name: 'b' }, { url: 'https://a.example' }]);
    expect(badRequest(() => parseEndpointsBody(Buffer.from('{'), 'add'))).toMatch(/JSON/);
    expect(badRequest(() => parseEndpointsBody(body({ endpoints: [] }), 'add'))).toMatch(/^endpoints must be a non-empty array/);
    expect(badRequest(() => parseEndpointsBody(body({ endpoints: [{ name: 'b' }] }), 'add'))).toBe('endpoints[0].url is required');
    expect(badRequest(() => parseEndpointsBody(body({ endpoints: [{ url: 'https://a.example' }, { url: 'ftp://x' }] }), 'add'))).toMatch(/^invalid endpoints\[1\]\.url: "ftp:\/\/x"/);
    expect(badRequest(() => parseEndpointsBody(body({ endpoints: [{ name: 'a b', url: 'https://a.example' }] }), 'add'))).toMatch(/^invalid endpoints\[0\]\.name/);
    expect(badRequest(() => parseEndpointsBody(body({ endpoints: [{}] }), 'remove'))).toBe('endpoints[0] needs a name or a url');
  });

  it('refuses an endpoint URL holding control characters or not starting with http(s):// and a host; removes any by its URL', () => {
    for (const url of ['http://127.0.0.1:19400/x\r\nX: y', 'http://e.com/a\tb', 'http:/e.com/x', 'http:e.com/x']) {
      expect([url, badRequest(() => parseEndpointsBody(body({ endpoints: [{ url }] }), 'add'))]).toEqual([url, expect.stringMatching(/^invalid endpoints\[0\]\.url: /)]);
    }
    // An endpoint stored before these checks can still be removed by its URL.
    expect(parseEndpointsBody(body({ endpoints: [{ url: 'http://e.com/x\r\ny' }] }), 'remove')).toEqual([{ url: 'http://e.com/x\r\ny' }]);
  });

  it('a repeated URL or name replaces the endpoint; removal matches every given field', () => {
    const start = [{ name: 'a', url: 'https://a.example' }, { url: 'https://b.example' }];
    expect(withEndpoints(start, [{ name: 'a', url: 'https://a2.example' }])).toEqual([{ url: 'https://b.example' }, { name: 'a', url: 'https://a2.example' }]);
    expect(withEndpoints(start, [{ name: 'b', url: 'https://b.example' }])).toEqual([{ name: 'a', url: 'https://a.example' }, { name: 'b', url: 'https://b.example' }]);
    expect(withEndpoints([], [{ url: 'https://c.example' }, { url: 'https://c.example' }])).toEqual([{ url: 'https://c.example' }]);
    expect(withoutEndpoints(start, [{ name: 'a' }])).toEqual([{ url: 'https://b.example' }]);
    expect(withoutEndpoints(start, [{ url: 'https://b.example' }])).toEqual([{ name: 'a', url: 'https://a.example' }]);
    expect(withoutEndpoints(start, [{ name: 'a', url: 'https://b.example' }])).toEqual(start);
  });

  it('fans a message out: one per endpoint, in order, with the endpoint URL, the group and endpoint names, and the given ids', () => {
    const message: QueueMessage = {
      messageId: 'msg_source',
      project: 'acme.main',
      url: 'https://unused.example',
      method: 'POST',
      header: { 'Content-Type': ['text/plain'] },
      body: 'aGk=',
      maxRetries: 3,
      notBefore: 5,
      createdAt: 5,
      callerIp: '127.0.0.1',
      scheduleId: 'scd_1',
    };
    const group = { name: 'team', endpoints: [{ name: 'a', url: 'https://a.example/x' }, { url: 'https://b.example/y' }] };
    const out = fanOut(message, group, (i) => `msg_${i}`);
    expect(out).toEqual([
      { ...message, messageId: 'msg_0', url: 'https://a.example/x', topicName: 'team', endpointName: 'a' },
      { ...message, messageId: 'msg_1', url: 'https://b.example/y', topicName: 'team' },
    ]);
    expect(message.messageId).toBe('msg_source'); // the template is not changed
  });
});
