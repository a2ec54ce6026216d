/**
 * What a produce request's record batches will look like on the broker, computed before anything is sent:
 * Kafka writes a request's batch for each partition on its own (a refused batch leaves the others written),
 * so whatever would refuse one partition's batch must refuse the whole request first.
 */

/**
 * Bytes of a record batch (magic 2) besides its records: base offset and length (Kafka's log overhead, 12),
 * partition leader epoch, magic, CRC, attributes, last offset delta, first and max timestamps, producer id
 * and epoch, base sequence and record count (49).
 */
export const RECORD_BATCH_OVERHEAD_BYTES = 61;

/**
 * How far a record's timestamp may lie from its batch's first timestamp (ms), either way. Kafka stores the
 * difference as a varlong, but @platformatic/kafka 2.12.1 (its @platformatic/dynamic-buffer 0.3.1
 * `writeVarInt64`) zigzag-encodes with a 32-bit sign and stops at bit 31, so a larger difference is
 * stored wrong (the record gets another timestamp) without any error.
 */
export const MAX_TIMESTAMP_DELTA_MS = 2 ** 31 - 1;

/** Kafka's default `max.message.bytes` of a topic (the broker's `message.max.bytes`): 1 MiB and the log overhead. */
export const DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024 + 12;

/** One record of a batch, as the producer gets it. */
export interface BatchRecord {
  key?: Buffer | undefined;
  value: Buffer;
  headers?: ReadonlyMap<Buffer, Buffer> | undefined;
  /** Milliseconds since the epoch. */
  timestamp: bigint;
}

/** Bytes of a signed varint or varlong (zigzag, 7 bits a byte) of an integer of at most 2^53 in size. */
function varintBytes(value: number): number {
  let zigzag = value >= 0 ? value * 2 : -value * 2 - 1;
  let bytes = 1;
  while (zigzag >= 128) {
    zigzag = Math.floor(zigzag / 128);
    bytes++;
  }
  return bytes;
}

function bytesField(bytes: Buffer | undefined): number {
  return bytes === undefined ? varintBytes(-1) : varintBytes(bytes.length) + bytes.length;
}

/**
 * The size of the uncompressed record batch (magic 2) of these records, as the broker measures it against
 * a topic's `max.message.bytes` (the whole batch, log overhead included).
 *
 * @param records one partition's records in request order; the first one's timestamp is the batch's
 */
export function recordBatchBytes(records: readonly BatchRecord[]): number {
  const first = records[0]?.timestamp ?? 0n;
  let total = RECORD_BATCH_OVERHEAD_BYTES;
  records.forEach((record, offsetDelta) => {
    let body = 1 + varintBytes(Number(record.timestamp - first)) + varintBytes(offsetDelta) + bytesField(record.key) + bytesField(record.value);
    body += varintBytes(record.headers?.size ?? 0);
    for (const [name, value] of record.headers ?? []) body += bytesField(name) + bytesField(value);
    total += varintBytes(body) + body;
  });
  return total;
}

/**
 * The first record (index) whose timestamp lies more than {@link MAX_TIMESTAMP_DELTA_MS} from the first
 * record's, or -1 when none does.
 */
export function timestampOutOfRange(records: readonly BatchRecord[]): number {
  const first = records[0]?.timestamp ?? 0n;
  const max = BigInt(MAX_TIMESTAMP_DELTA_MS);
  return records.findIndex((r) => r.timestamp - first > max || first - r.timestamp > max);
}
