import { createHash } from 'node:crypto';
import type { DlqEntry, MessageEvent, QueueMessage } from './message';
import { queueMessage } from './testing/message';
import { dlqView, eventView, messageView } from './views';

function message(overrides: Partial<QueueMessage> = {}): QueueMessage {
  return queueMessage({
    header: { 'Content-Type': ['application/json'] },
    body: Buffer.from('{"a":1}').toString('base64'),
    notBefore: 2000,
    ...overrides,
  });
}

describe('messageView', () => {
  it('shows the fields the SDK reads, without internal or absent ones', () => {
    const view = messageView(message({ timeoutMs: 5000, callbackSettings: { retries: 1 } }));
    expect(view).toEqual({
      messageId: 'msg_1',
      url: 'https://example.com/hook',
      method: 'POST',
      header: { 'Content-Type': ['application/json'] },
      body: '{"a":1}',
      maxRetries: 3,
      notBefore: 2000,
      createdAt: 1000,
      callerIP: '203.0.113.7',
    });
    expect(Object.values(view)).not.toContain(null);
    expect(Object.values(view)).not.toContain(undefined);
  });

  it('shows the optional fields when set', () => {
    expect(
      messageView(
        message({ retryDelayExpression: '1000', callback: 'https://cb.example.com', failureCallback: 'https://f.example.com', labels: ['a', 'b'] }),
      ),
    ).toMatchObject({ retryDelayExpression: '1000', callback: 'https://cb.example.com', failureCallback: 'https://f.example.com', label: 'a', labels: ['a', 'b'] });
    expect(messageView(message({ labels: [] }))).not.toHaveProperty('label');
  });

  it('gives bodies that are not UTF-8 as bodyBase64, and no body when empty', () => {
    const binary = Buffer.from([0xff, 0xfe, 0x00, 0x80]).toString('base64');
    const view = messageView(message({ body: binary }));
    expect(view.bodyBase64).toBe(binary);
    expect(view).not.toHaveProperty('body');
    const empty = messageView(message({ body: '' }));
    expect(empty).not.toHaveProperty('body');
    expect(empty).not.toHaveProperty('bodyBase64');
    expect(messageView(message({ body: Buffer.from('héllo ✓ \u{1F600}').toString('base64') })).body).toBe('héllo ✓ \u{1F600}');
    expect(messageView(message({ body: Buffer.from('\uFEFFbom').toString('base64') })).body).toBe('\uFEFFbom');
  });
});

describe('dlqView', () => {
  const entry: DlqEntry = { dlqId: '1000-abc', message: message(), failedAt: 3000 };

  it('adds the DLQ fields to the message view', () => {
    expect(dlqView({ ...entry, responseStatus: 500, responseHeader: { 'X-A': ['1'] }, responseBody: Buffer.from('oops').toString('base64') })).toEqual({
      ...messageView(entry.message),
      dlqId: '1000-abc',
      responseStatus: 500,
      responseHeader: { 'X-A': ['1'] },
      responseBody: 'oops',
    });
    expect(dlqView({ ...entry, error: 'connect ECONNREFUSED' })).toEqual({ ...messageView(entry.message), dlqId: '1000-abc', error: 'connect ECONNREFUSED' });
  });

  it('adds the failure callback state when given', () => {
    expect(dlqView(entry, 'CALLBACK_FAIL')).toEqual({ ...messageView(entry.message), dlqId: '1000-abc', failureCallbackInfo: { state: 'CALLBACK_FAIL' } });
    expect(dlqView(entry)).not.toHaveProperty('failureCallbackInfo');
  });

  it('gives a binary response body as responseBodyBase64', () => {
    const binary = Buffer.from([0xc3, 0x28]).toString('base64');
    const view = dlqView({ ...entry, responseBody: binary });
    expect(view.responseBodyBase64).toBe(binary);
    expect(view).not.toHaveProperty('responseBody');
    expect(dlqView({ ...entry, responseBody: '' })).not.toHaveProperty('responseBody');
  });
});

describe('eventView', () => {
  it('leaves absent fields out and adds the first label', () => {
    const event: MessageEvent = { time: 1, state: 'CREATED', messageId: 'msg_1', url: 'https://example.com' };
    expect(eventView(event)).toEqual({ time: 1, state: 'CREATED', messageId: 'msg_1', url: 'https://example.com' });
    expect(
      eventView({ ...event, state: 'ERROR', nextDeliveryTime: 5, error: 'timeout', header: { A: ['b'] }, body: 'Ym9keQ==', labels: ['x', 'y'], responseStatus: 502 }),
    ).toEqual({
      time: 1,
      state: 'ERROR',
      messageId: 'msg_1',
      url: 'https://example.com',
      nextDeliveryTime: 5,
      error: 'timeout',
      header: { A: ['b'] },
      body: 'Ym9keQ==',
      label: 'x',
      labels: ['x', 'y'],
      responseStatus: 502,
    });
  });
});

describe('URL groups and redaction in the views', () => {
  const sha = (text: string) => `REDACTED:${createHash('sha256').update(text).digest('hex')}`;

  it('shows topicName and endpointName when set', () => {
    const view = messageView(message({ topicName: 'g', endpointName: 'e1' }));
    expect(view).toMatchObject({ topicName: 'g', endpointName: 'e1' });
    expect(eventView({ time: 1, state: 'CREATED', messageId: 'm', url: 'u', topicName: 'g', endpointName: 'e1' })).toMatchObject({ topicName: 'g', endpointName: 'e1' });
  });

  it('shows redacted bodies and headers as REDACTED:<sha256 hex>, in messages, DLQ entries and events', () => {
    const header = { Authorization: ['Bearer x'], 'Content-Type': ['application/json'] };
    const m = message({ header, redact: { body: true, header: ['authorization'] } });
    expect(messageView(m)).toMatchObject({ body: sha('{"a":1}'), header: { Authorization: [sha('Bearer x')], 'Content-Type': ['application/json'] } });
    expect(dlqView({ dlqId: 'd', message: m, failedAt: 1 })).toMatchObject({ body: sha('{"a":1}') });
    const all = messageView(message({ header, redact: { header: true } }));
    expect(all).toMatchObject({ body: '{"a":1}', header: { Authorization: [sha('Bearer x')], 'Content-Type': [sha('application/json')] } });
    const event = eventView({ time: 1, state: 'CREATED', messageId: 'm', url: 'u', header, body: m.body, redact: m.redact });
    expect(event).toMatchObject({ body: sha('{"a":1}'), header: { Authorization: [sha('Bearer x')] } });
  });
});

describe('schedules in the views', () => {
  it('shows the scheduleId of a message a schedule made, in the message, DLQ and event views', () => {
    expect(messageView(message({ scheduleId: 'scd_1' })).scheduleId).toBe('scd_1');
    expect(messageView(message()).scheduleId).toBeUndefined();
    expect(dlqView({ dlqId: 'd', message: message({ scheduleId: 'scd_1' }), failedAt: 1 }).scheduleId).toBe('scd_1');
    expect(eventView({ time: 1, state: 'CREATED', messageId: 'm', url: 'u', scheduleId: 'scd_1' })).toMatchObject({ scheduleId: 'scd_1' });
  });
});
