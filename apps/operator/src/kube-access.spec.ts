import { withEncodedData } from './kube-access';

describe('withEncodedData', () => {
  it("moves a Secret's stringData into base64 data, keeping data it had", () => {
    const secret = { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, data: { a: 'YQ==' }, stringData: { b: 'bé' } };
    expect(withEncodedData(secret)).toEqual({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 's' }, data: { a: 'YQ==', b: Buffer.from('bé').toString('base64') } });
  });

  it('leaves other kinds alone', () => {
    const map = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'm' }, stringData: { b: 'x' } };
    expect(withEncodedData(map)).toBe(map);
  });
});
