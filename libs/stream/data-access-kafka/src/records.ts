import { IS_CONTROL, type fetchV17 } from '@platformatic/kafka';
import { type RestMessage, restMessage } from '@restash/stream/util-rest';

/** Record batch attribute bit 3: the broker stamped the batch (LogAppendTime); its records carry maxTimestamp. */
const LOG_APPEND_TIME = 1 << 3;

/** One partition of a Fetch response as @platformatic/kafka's Consumer.fetch returns it. */
export type FetchedPartition = fetchV17.FetchResponsePartition;

/**
 * A record as the API shows it (one flat object: consuming makes millions), under its broker-side topic
 * name until the caller renames it to the tenant's.
 */
export type ConsumedRecord = RestMessage;

/**
 * The records of one fetched partition at or after offset `from`, in offset order and decoded as Messages, and the offset to
 * fetch next. Control batches (transaction markers) give no records but move the next offset past them;
 * aborted transactions were already taken out by the client (read_committed). A batch is returned whole,
 * so its first records may lie before `from`: those are left out.
 *
 * @returns `next` is `from` when the partition gave no batch
 */
export function partitionRecords(topic: string, partition: FetchedPartition, from: number): { records: ConsumedRecord[]; next: number } {
  const records: ConsumedRecord[] = [];
  let next = from;
  for (const batch of partition.records ?? []) {
    const firstOffset = Number(batch.firstOffset);
    next = Math.max(next, firstOffset + batch.lastOffsetDelta + 1);
    if (batch.attributes & IS_CONTROL) continue;
    const firstTimestamp = Number(batch.firstTimestamp);
    const appendTime = batch.attributes & LOG_APPEND_TIME ? Number(batch.maxTimestamp) : undefined;
    for (const record of batch.records) {
      const offset = firstOffset + record.offsetDelta;
      if (offset < from) continue;
      const timestamp = appendTime ?? firstTimestamp + Number(record.timestampDelta);
      records.push(restMessage(topic, partition.partitionIndex, offset, timestamp, record.key, record.value, record.headers));
    }
  }
  return { records, next };
}
