import { MultipleErrors, NetworkError, ProtocolError, UserError } from '@platformatic/kafka';
import { kafkaErrorCode } from './errors';

describe('kafkaErrorCode', () => {
  it("reads the Kafka error code of the client's protocol error, however deeply it is wrapped", () => {
    expect(kafkaErrorCode(new ProtocolError('REBALANCE_IN_PROGRESS'))).toBe('REBALANCE_IN_PROGRESS');
    const retried = new MultipleErrors('produce failed 2 times.', [new NetworkError('closed'), new MultipleErrors('x', [new ProtocolError('MESSAGE_TOO_LARGE')])]);
    expect(kafkaErrorCode(retried)).toBe('MESSAGE_TOO_LARGE');
    expect(kafkaErrorCode(new UserError('wrapped', { cause: new ProtocolError('NOT_COORDINATOR') }))).toBe('NOT_COORDINATOR');
  });

  it('prefers the partition’s own code to the per-record UNKNOWN_SERVER_ERROR of a refused record', () => {
    const refused = new MultipleErrors('Producing messages failed.', [
      new MultipleErrors('Received response with error while executing API Produce(v11)', [new ProtocolError(-1), new ProtocolError('INVALID_TIMESTAMP')]),
    ]);
    expect(kafkaErrorCode(refused)).toBe('INVALID_TIMESTAMP');
    expect(kafkaErrorCode(new ProtocolError(-1))).toBe('UNKNOWN_SERVER_ERROR');
  });

  it("counts the client's 'Unknown topic' error of a metadata call as UNKNOWN_TOPIC_OR_PARTITION", () => {
    expect(kafkaErrorCode(new UserError('Unknown topic restash.a.b.orders.'))).toBe('UNKNOWN_TOPIC_OR_PARTITION');
  });

  it('gives "" when no broker error code is there', () => {
    expect(kafkaErrorCode(new NetworkError('Connection refused'))).toBe('');
    expect(kafkaErrorCode(new Error('Unknown topic x'))).toBe('');
    expect(kafkaErrorCode(undefined)).toBe('');
    const loop: { cause?: unknown } = {};
    loop.cause = loop;
    expect(kafkaErrorCode(loop)).toBe('');
  });
});
