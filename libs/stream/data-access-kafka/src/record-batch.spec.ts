import { Reader, createRecordsBatch, readRecordsBatch } from '@platformatic/kafka';
import { type BatchRecord, MAX_TIMESTAMP_DELTA_MS, recordBatchBytes, timestampOutOfRange } from './record-batch';

const T = 1_700_000_000_000n;

/** The bytes the client itself writes for the records (one partition's batch). */
function encoded(records: BatchRecord[]): number {
  return createRecordsBatch(records.map((r) => ({ ...r, topic: 't', headers: r.headers as Map<Buffer, Buffer> | undefined }))).length;
}

describe('recordBatchBytes', () => {
  it("is the size of the batch the client writes: keys or none, empty and long values, repeated headers, timestamps either side of the first", () => {
    const cases: BatchRecord[][] = [
      [{ value: Buffer.from('abc'), timestamp: T }],
      [{ key: Buffer.from('k'), value: Buffer.alloc(0), timestamp: T }],
      [
        { key: Buffer.from('ü-key'), value: Buffer.alloc(200), timestamp: T },
        { value: Buffer.alloc(20_000, 1), timestamp: T - 86_400_000n, headers: new Map([[Buffer.from('h'), Buffer.from('1')], [Buffer.from('h'), Buffer.from('2')]]) },
        { value: Buffer.alloc(3_000_000), timestamp: T + BigInt(MAX_TIMESTAMP_DELTA_MS) },
        { value: Buffer.from('x'), timestamp: T - BigInt(MAX_TIMESTAMP_DELTA_MS) },
      ],
      Array.from({ length: 300 }, (_, i) => ({ value: Buffer.from(`v${i}`), timestamp: T + BigInt(i) })),
    ];
    for (const records of cases) expect(recordBatchBytes(records)).toBe(encoded(records));
  });
});

describe('timestampOutOfRange', () => {
  it('finds the first record more than 2^31-1 ms from the first one, either way', () => {
    const at = (...deltas: number[]) => deltas.map((d) => ({ value: Buffer.from('v'), timestamp: T + BigInt(d) }));
    expect(timestampOutOfRange(at(0, MAX_TIMESTAMP_DELTA_MS, -MAX_TIMESTAMP_DELTA_MS))).toBe(-1);
    expect(timestampOutOfRange(at(0, 5, MAX_TIMESTAMP_DELTA_MS + 1))).toBe(2);
    expect(timestampOutOfRange(at(0, -MAX_TIMESTAMP_DELTA_MS - 1, 2 ** 40))).toBe(1);
    expect(timestampOutOfRange([])).toBe(-1);
  });

  it('guards a real fault of the client: @platformatic/kafka 2.12.1 stores a timestamp 2^31 ms or more from the first one wrong', () => {
    // When this fails, the client encodes large timestamp deltas right: the gateway's rule can go.
    const read = (delta: bigint) => {
      const batch = readRecordsBatch(Reader.from(createRecordsBatch([{ topic: 't', value: Buffer.from('a'), timestamp: T }, { topic: 't', value: Buffer.from('b'), timestamp: T + delta }])));
      return batch.records[1]!.timestampDelta;
    };
    expect(read(BigInt(MAX_TIMESTAMP_DELTA_MS))).toBe(BigInt(MAX_TIMESTAMP_DELTA_MS));
    expect(read(-30n * 86_400_000n)).not.toBe(-30n * 86_400_000n);
    expect(read(2n ** 31n)).not.toBe(2n ** 31n);
  });
});
