import { callbackMessage, callbackPayload } from './callback';
import type { QueueMessage } from './message';
import { queueMessage } from './testing/message';

function source(overrides: Partial<QueueMessage> = {}): QueueMessage {
  return queueMessage({
    messageId: 'msg_src',
    method: 'PUT',
    header: { 'Content-Type': ['text/plain'], 'X-A': ['1'] },
    body: Buffer.from('source body').toString('base64'),
    maxRetries: 2,
    notBefore: 1_700_000_001_000,
    createdAt: 1_700_000_000_000,
    callback: 'https://cb.example.com/ok',
    failureCallback: 'https://cb.example.com/failed',
    labels: ['l'],
    ...overrides,
  });
}

const outcome = { status: 500, header: { 'Content-Type': ['text/plain'] }, body: Buffer.from('internal error') };

describe('callbackPayload', () => {
  it('reports the outcome and the source message', () => {
    expect(callbackPayload(source(), outcome, 1, 1000)).toEqual({
      status: 500,
      header: { 'Content-Type': ['text/plain'] },
      body: Buffer.from('internal error').toString('base64'),
      retried: 1,
      maxRetries: 2,
      sourceMessageId: 'msg_src',
      sourceMessasgeId: 'msg_src',
      url: 'https://example.com/hook',
      method: 'PUT',
      sourceHeader: { 'Content-Type': ['text/plain'], 'X-A': ['1'] },
      sourceBody: Buffer.from('source body').toString('base64'),
      notBefore: '1700000001000',
      createdAt: '1700000000000',
      callerIP: '203.0.113.7',
    });
  });

  it('carries topicName and endpointName of a URL-group message', () => {
    expect(callbackPayload(source({ topicName: 'g', endpointName: 'e' }), outcome, 0, 100)).toMatchObject({ topicName: 'g', endpointName: 'e' });
    expect(callbackPayload(source(), outcome, 0, 100)).not.toHaveProperty('topicName');
  });

  it('cuts the response body and adds the dlqId', () => {
    const payload = callbackPayload(source(), outcome, 2, 8, 'dlq_1');
    expect(Buffer.from(payload.body as string, 'base64').toString()).toBe('internal');
    expect(payload.dlqId).toBe('dlq_1');
    expect(callbackPayload(source(), outcome, 2, 0).body).toBe('');
  });
});

describe('callbackMessage', () => {
  const payload = { status: 200, sourceMessageId: 'msg_src' };

  it('POSTs the payload to the callback with defaults', () => {
    expect(callbackMessage(source(), 'callback', payload, 5000, 3)).toEqual({
      messageId: 'msg_src_cb',
      project: 'tenant.queue',
      url: 'https://cb.example.com/ok',
      method: 'POST',
      header: { 'Content-Type': ['application/json'] },
      body: Buffer.from(JSON.stringify(payload)).toString('base64'),
      maxRetries: 3,
      notBefore: 5000,
      createdAt: 5000,
      callerIp: '203.0.113.7',
      callbackOf: 'msg_src',
    });
  });

  it('applies the failure-callback settings', () => {
    const message = callbackMessage(
      source({
        callbackSettings: { method: 'PATCH' },
        failureCallbackSettings: {
          method: 'PUT',
          header: { Authorization: ['Bearer x'], 'Content-Type': ['application/x-custom'] },
          retries: 0,
          timeoutMs: 1000,
          retryDelayExpression: '100',
          delayMs: 60_000,
        },
      }),
      'failure-callback',
      payload,
      5000,
      3,
    );
    expect(message).toEqual({
      messageId: 'msg_src_fcb',
      project: 'tenant.queue',
      url: 'https://cb.example.com/failed',
      method: 'PUT',
      header: { 'Content-Type': ['application/x-custom'], Authorization: ['Bearer x'] },
      body: Buffer.from(JSON.stringify(payload)).toString('base64'),
      maxRetries: 0,
      timeoutMs: 1000,
      retryDelayExpression: '100',
      notBefore: 65_000,
      createdAt: 5000,
      callerIp: '203.0.113.7',
      callbackOf: 'msg_src',
    });
    expect(JSON.parse(Buffer.from(message.body, 'base64').toString())).toEqual(payload);
  });

  it('redacts its own body in views when the source has redacted fields', () => {
    const payload = callbackPayload(source({ callback: 'https://cb.example' }), outcome, 0, 100);
    expect(callbackMessage(source({ callback: 'https://cb.example', redact: { header: ['Authorization'] } }), 'callback', payload, 1, 3).redact).toEqual({ body: true });
    expect(callbackMessage(source({ callback: 'https://cb.example' }), 'callback', payload, 1, 3).redact).toBeUndefined();
  });

  it('throws when the source has no such URL', () => {
    expect(() => callbackMessage(source({ callback: undefined }), 'callback', payload, 0, 3)).toThrow(/no callback URL/);
    expect(() => callbackMessage(source({ failureCallback: undefined }), 'failure-callback', payload, 0, 3)).toThrow(/no failure-callback URL/);
  });
});
