import { IS_CONTROL, Reader, type RecordsBatch, createRecordsBatch, readRecordsBatch } from '@platformatic/kafka';
import { type FetchedPartition, partitionRecords } from './records';

/** A record batch as the broker returns it: written and read back by the client's own codec. */
function batch(firstOffset: number, records: Array<{ key?: string; value: string; headers?: Array<[string, string]> }>, firstTimestamp = 1_700_000_000_000n): RecordsBatch {
  const written = createRecordsBatch(
    records.map((r, i) => ({
      topic: 't',
      key: r.key === undefined ? undefined : Buffer.from(r.key),
      value: Buffer.from(r.value),
      headers: new Map((r.headers ?? []).map(([k, v]) => [Buffer.from(k), Buffer.from(v)])),
      timestamp: firstTimestamp + BigInt(i * 10),
    })),
  );
  return { ...readRecordsBatch(Reader.from(written)), firstOffset: BigInt(firstOffset) };
}

const partition = (...records: RecordsBatch[]): FetchedPartition => ({
  partitionIndex: 0,
  errorCode: 0,
  highWatermark: 0n,
  lastStableOffset: 0n,
  logStartOffset: 0n,
  abortedTransactions: null,
  preferredReadReplica: -1,
  records,
});

describe('partitionRecords', () => {
  it('numbers records from their batch and decodes them as Messages: timestamps, keys ("" for none), values and repeated headers in order', () => {
    const { records, next } = partitionRecords('t', partition(batch(40, [{ key: 'k', value: 'a', headers: [['h', '1'], ['h', '2']] }, { value: 'b' }])), 40);
    expect(next).toBe(42);
    expect(JSON.stringify(records)).toBe(
      JSON.stringify([
        { topic: 't', partition: 0, offset: 40, timestamp: 1_700_000_000_000, key: 'k', value: 'a', headers: [{ key: 'h', value: '1' }, { key: 'h', value: '2' }] },
        { topic: 't', partition: 0, offset: 41, timestamp: 1_700_000_000_010, key: '', value: 'b', headers: [] },
      ]),
    );
  });

  it('leaves out the records of a batch before the offset asked for, and gives the offset after the last batch', () => {
    const { records, next } = partitionRecords('t', partition(batch(10, [{ value: 'a' }, { value: 'b' }, { value: 'c' }]), batch(13, [{ value: 'd' }])), 12);
    expect(records.map((r) => r.offset)).toEqual([12, 13]);
    expect(next).toBe(14);
  });

  it('skips control batches (transaction markers) but moves past them', () => {
    const marker = { ...batch(5, [{ value: 'commit marker' }]), attributes: IS_CONTROL };
    const { records, next } = partitionRecords('t', partition(batch(3, [{ value: 'a' }, { value: 'b' }]), marker), 3);
    expect(records.map((r) => r.value)).toEqual(['a', 'b']);
    expect(next).toBe(6);
  });

  it('gives every record of a LogAppendTime batch the broker’s time', () => {
    const stamped = { ...batch(0, [{ value: 'a' }, { value: 'b' }]), attributes: 1 << 3, maxTimestamp: 1_800_000_000_000n };
    expect(partitionRecords('t', partition(stamped), 0).records.map((r) => r.timestamp)).toEqual([1_800_000_000_000, 1_800_000_000_000]);
  });

  it('gives nothing and the same offset for a partition without batches', () => {
    expect(partitionRecords('t', { ...partition(), records: null }, 7)).toEqual({ records: [], next: 7 });
  });
});
