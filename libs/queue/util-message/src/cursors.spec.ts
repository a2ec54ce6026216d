import { dlqCursor, eventCursor, eventCursorStreamId, parseDlqCursor } from './cursors';

describe('events cursors', () => {
  it('hands out one number per stream entry and reads it back as that entry', () => {
    expect(eventCursor('1763942400000-7')).toBe('1763942400000007');
    expect(eventCursorStreamId('1763942400000007')).toBe('1763942400000-7');
    // seq >= 1000 does not fit the number: the stream id itself is the cursor.
    expect(eventCursor('1763942400000-1500')).toBe('1763942400000-1500');
    expect(eventCursorStreamId('1763942400000-1500')).toBe('1763942400000-1500');
  });

  it('reads 13 digits or fewer as a Unix time in ms (that millisecond and older)', () => {
    expect(eventCursorStreamId('1763942400000')).toBe('1763942400001-0');
    expect(eventCursorStreamId('0')).toBe('1-0');
  });

  it('refuses what no page handed out: signs, letters, more than 16 digits, past 2^53, stream id parts past 2^64', () => {
    for (const cursor of ['', 'abc', '-1', '+5', '1.5', '99999999999999999', '9007199254740993', '1-2-3', '18446744073709551616-0', '0-18446744073709551616']) {
      expect([cursor, eventCursorStreamId(cursor)]).toEqual([cursor, undefined]);
    }
    expect(eventCursorStreamId('18446744073709551615-18446744073709551615')).toBe('18446744073709551615-18446744073709551615');
  });
});

describe('DLQ cursors', () => {
  it('names the last entry read, or a position (earlier versions)', () => {
    const cursor = dlqCursor(1763942400000, '1763942300000-0123abcd_cb0');
    expect(cursor).toBe('1763942400000:1763942300000-0123abcd_cb0');
    expect(parseDlqCursor(cursor)).toEqual({ failedAt: 1763942400000, dlqId: '1763942300000-0123abcd_cb0' });
    expect(parseDlqCursor('100')).toEqual({ position: 100 });
  });

  it('refuses anything else', () => {
    for (const cursor of ['', 'garbage', '1:2:3', '1:', ':a', '-1', '1:a b', '1:a\nb', '99999999999999999', '99999999999999999:a']) {
      expect([cursor, parseDlqCursor(cursor)]).toEqual([cursor, undefined]);
    }
  });
});
