import { headerText } from './header-text';

describe('headerText', () => {
  const asNodeGivesIt = (bytes: number[]) => Buffer.from(bytes).toString('latin1');

  it('reads a value whose bytes are UTF-8 as UTF-8', () => {
    expect(headerText(asNodeGivesIt([...Buffer.from('grüße €', 'utf8')]))).toBe('grüße €');
  });

  it('keeps ASCII, bytes that are not UTF-8 (one character each), and characters Node cannot have made', () => {
    expect(headerText('plain ascii')).toBe('plain ascii');
    expect(headerText(asNodeGivesIt([0x63, 0x61, 0x66, 0xe9]))).toBe('café');
    expect(headerText('ü€')).toBe('ü€');
  });
});
