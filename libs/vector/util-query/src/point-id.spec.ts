import { pointId } from './point-id';

describe('pointId', () => {
  it('is a UUID, the same for the same namespace and id, different otherwise', () => {
    const a = pointId('', 'id-1');
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(pointId('', 'id-1')).toBe(a);
    expect(pointId('ns', 'id-1')).not.toBe(a);
    expect(pointId('', 'id-2')).not.toBe(a);
    // The separator keeps ("a", "b\0c") and ("a\0b", "c") apart.
    expect(pointId('a', 'bc')).not.toBe(pointId('ab', 'c'));
  });
});
