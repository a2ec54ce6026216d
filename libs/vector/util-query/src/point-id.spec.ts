import { createHash } from 'node:crypto';
import { pointId } from './point-id';

describe('pointId', () => {
  it('is a UUID, the same for the same namespace and id, different otherwise', () => {
    const a = pointId('', 'id-1');
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(pointId('', 'id-1')).toBe(a);
    expect(pointId('ns', 'id-1')).not.toBe(a);
    expect(pointId('', 'id-2')).not.toBe(a);
  });

  it('keeps apart pairs whose concatenation is the same', () => {
    expect(pointId('a', 'bc')).not.toBe(pointId('ab', 'c'));
    expect(pointId('', 'ab')).not.toBe(pointId('a', 'b'));
    // The old `namespace NUL id` encoding collided here; the length prefix does not.
    expect(pointId('a\0b', 'c')).not.toBe(pointId('a', 'b\0c'));
    expect(pointId('1:a', 'b')).not.toBe(pointId('', '3:1:ab'));
  });

  it('hashes the UTF-8 byte length of the namespace, a colon, the namespace and the id', () => {
    const hex = createHash('sha256').update('3:équ1').digest('hex').slice(0, 32);
    expect(pointId('éq', 'u1').replaceAll('-', '').slice(0, 12)).toBe(hex.slice(0, 12));
  });
});
