import { Logger } from '@nestjs/common';
import { RepeatLimiter } from '@restash/shared/util-http';
import { ProduceRefusedError, kafkaErrorCode } from '@restash/stream/data-access-kafka';
import { StreamError } from '@restash/stream/util-rest';
import type { ClusterView, StreamObserver } from './ports';

/** Kafka error codes of records the broker refuses (400) and of batches over its size limits (413). */
const REFUSED_RECORD = new Set(['INVALID_TIMESTAMP', 'INVALID_RECORD', 'CORRUPT_MESSAGE']);
const TOO_LARGE = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE']);
/** Kafka error codes that mean "the group is moving; try again" rather than "Kafka is down". */
const GROUP_BUSY = new Set(['REBALANCE_IN_PROGRESS', 'ILLEGAL_GENERATION', 'UNKNOWN_MEMBER_ID', 'NOT_COORDINATOR', 'COORDINATOR_LOAD_IN_PROGRESS']);

/**
 * The Stream API's one wrapper around its backends (docs/operations.md, "When an engine fails"; docs/stream.md,
 * "Stream: errors"): what a Kafka call throws becomes the API's StreamError — 400 for records the broker refuses,
 * 404 for an unknown topic or partition, 409 while the group rebalances, 413 for batches over the broker's limits,
 * else 503 `Kafka cannot be reached` — and an instance-directory call on the control Redis that fails becomes 503
 * `the tenant registry cannot be reached`. Each 503 is counted (StreamObserver.backendError: `broker`, `registry`)
 * and logged, a failure repeating alike once per 10 s. StreamErrors pass through.
 */
export class StreamBackendCalls {
  /** Logs carry the context they always had: the Stream API's service. */
  private readonly logger = new Logger('StreamService');
  /** An engine failing every request alike is logged once per 10 s. */
  readonly repeats = new RepeatLimiter();

  constructor(private readonly observer: StreamObserver) {}

  /** Runs a Kafka call, turning its failures into the API's errors. @throws StreamError what {@link kafkaFailure} makes of its error */
  async kafka<T>(view: ClusterView, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw this.kafkaFailure(view, error);
    }
  }

  /** The StreamError a failed Kafka call of a request on `view` answers (counted and logged when it is a 503). */
  kafkaFailure(view: ClusterView, error: unknown): StreamError {
    if (error instanceof StreamError) return error;
    if (error instanceof ProduceRefusedError) return produceRefused(error, view.cluster.prefix);
    const type = kafkaErrorCode(error);
    const message = error instanceof Error ? error.message : String(error);
    // The broker refusing what the client sent (e.g. under stricter broker settings than the gateway checks) is a client error.
    if (REFUSED_RECORD.has(type)) return StreamError.badRequest(`Illegal argument: the broker refused a message (${type}): ${stripPrefix(message, view.cluster.prefix)}`);
    if (TOO_LARGE.has(type)) return new StreamError(413, `Request too large: the broker refused the messages (${type})`);
    if (type === 'UNKNOWN_TOPIC_OR_PARTITION') return new StreamError(404, `Unknown topic or partition: ${stripPrefix(message, view.cluster.prefix)}`);
    if (GROUP_BUSY.has(type)) return new StreamError(409, `The consumer group is rebalancing, retry: ${message}`);
    if (message.startsWith('the consumer instance has not joined')) return new StreamError(409, message);
    this.observer.backendError(view.tenant, 'broker');
    this.repeats.logEvent(this.logger, 'warn', 'engine.call-failed', { engine: 'kafka', tenant: view.tenant, cluster: view.cluster.id, error });
    return new StreamError(503, 'Service unavailable: Kafka cannot be reached');
  }

  /** Runs an instance-directory call, turning a control-Redis failure into the API's 503. @throws StreamError 503, or as thrown */
  async directory<T>(view: ClusterView, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      if (error instanceof StreamError) throw error;
      this.observer.backendError(view.tenant, 'registry');
      this.repeats.logEvent(this.logger, 'warn', 'engine.call-failed', { engine: 'control-redis', tenant: view.tenant, call: 'instance-directory', error });
      throw new StreamError(503, 'Service unavailable: the tenant registry cannot be reached');
    }
  }
}

/**
 * The API's answer to a produce refused before anything was written (docs/stream.md, "Stream: produce"): 400
 * naming the message whose timestamp lies too far from its partition's first, 413 for a partition's
 * batch over its topic's `max.message.bytes`.
 */
function produceRefused(error: ProduceRefusedError, prefix: string): StreamError {
  const text = stripPrefix(error.message, prefix);
  if (error.reason === 'too-large') return new StreamError(413, `Request too large: ${text}; nothing was written`);
  return StreamError.badRequest(
    `Illegal argument: message[${error.index}].${text} (message[${error.firstIndex}]): the messages to one partition in one request must have timestamps within 2^31-1 ms (about 24.8 days) of the first one's; nothing was written, send such messages in separate requests`,
  );
}

function stripPrefix(message: string, prefix: string): string {
  return message.split(prefix).join('');
}
