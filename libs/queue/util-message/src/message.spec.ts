import { HTTP_METHODS, MESSAGE_STATES, callbackMessageId, dlqIdOf, failureCallbackState, newMessageId } from './message';

describe('message ids', () => {
  it('makes msg_ ids of 32 hex digits, distinct each time', () => {
    const id = newMessageId();
    expect(id).toMatch(/^msg_[0-9a-f]{32}$/);
    expect(newMessageId()).not.toBe(id);
  });

  it('derives callback and DLQ ids from the message', () => {
    expect(callbackMessageId('msg_x', 'callback')).toBe('msg_x_cb');
    expect(callbackMessageId('msg_x', 'failure-callback')).toBe('msg_x_fcb');
    expect(dlqIdOf({ messageId: 'msg_abc', createdAt: 1700 })).toBe('1700-abc');
  });

  it('names a failure callback state for each message status', () => {
    expect((['pending', 'active', 'delivered', 'failed', 'cancelled'] as const).map(failureCallbackState)).toEqual([
      'CALLBACK_INPROGRESS',
      'CALLBACK_INPROGRESS',
      'CALLBACK_SUCCESS',
      'CALLBACK_FAIL',
      'CALLBACK_CANCELED',
    ]);
  });

  it('lists the methods and states', () => {
    expect(HTTP_METHODS).toEqual(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']);
    expect(MESSAGE_STATES).toContain('DELIVERED');
  });
});
