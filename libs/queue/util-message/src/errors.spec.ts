import { QueueError, encodeQueueError } from './errors';

describe('QueueError', () => {
  it('carries a status and a message', () => {
    const error = QueueError.badRequest('invalid Upstash-Delay: "x"');
    expect(error).toBeInstanceOf(Error);
    expect(error).toBeInstanceOf(QueueError);
    expect(error.status).toBe(400);
    expect(error.message).toBe('invalid Upstash-Delay: "x"');
    expect(error.name).toBe('QueueError');
    expect(new QueueError(404, 'message not found').status).toBe(404);
  });

  it('encodes the QStash error body', () => {
    expect(encodeQueueError('bad "thing"')).toBe('{"error":"bad \\"thing\\""}');
    expect(JSON.parse(encodeQueueError('x'))).toEqual({ error: 'x' });
  });
});
