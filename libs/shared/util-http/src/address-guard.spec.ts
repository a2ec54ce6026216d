import fc from 'fast-check';
import { LOOPBACK_ALLOWLIST_ENTRIES, addressVerdict, parseAllowlist } from './address-guard';

const none = parseAllowlist([]);

/** Expects `address` refused with no allowlist, for a reason that contains `reason`. */
function refuses(address: string, reason: string): void {
  const verdict = addressVerdict(address, none);
  expect(verdict.allowed ? '' : verdict.reason).toContain(reason);
  expect(verdict.allowed).toBe(false);
}

describe('addressVerdict', () => {
  it.each(['93.184.216.34', '8.8.8.8', '1.1.1.1', '2606:4700::1111', '2001:4860:4860::8888', '[2606:4700::1111]', ' 8.8.8.8 '])('allows the public address %s', (address) => {
    expect(addressVerdict(address, none)).toEqual({ allowed: true });
  });

  it.each([
    ['127.0.0.1', 'loopback address 127.0.0.1'],
    ['127.255.255.254', 'loopback address 127.255.255.254'],
    ['::1', 'loopback address ::1'],
    ['[::1]', 'loopback address ::1'],
    ['10.0.0.1', 'private address 10.0.0.1'],
    ['172.16.0.1', 'private address 172.16.0.1'],
    ['172.31.255.255', 'private address 172.31.255.255'],
    ['192.168.1.1', 'private address 192.168.1.1'],
    ['169.254.169.254', 'link-local address 169.254.169.254'],
    ['169.254.0.1', 'link-local address 169.254.0.1'],
    ['fe80::1', 'link-local address fe80::1'],
    ['fe80::1%eth0', 'link-local address'],
    ['fc00::1', 'unique-local address fc00::1'],
    ['fd00:ec2::254', 'unique-local address fd00:ec2::254'],
    ['100.64.0.1', 'carrier-grade NAT address 100.64.0.1'],
    ['100.100.100.200', 'carrier-grade NAT address 100.100.100.200'],
    ['0.0.0.0', 'unspecified address 0.0.0.0'],
    ['0.1.2.3', 'unspecified address 0.1.2.3'],
    ['::', 'unspecified address ::'],
    ['255.255.255.255', 'broadcast address 255.255.255.255'],
    ['224.0.0.1', 'multicast address 224.0.0.1'],
    ['239.255.255.250', 'multicast address 239.255.255.250'],
    ['ff02::1', 'multicast address ff02::1'],
    ['240.0.0.1', 'reserved address 240.0.0.1'],
    ['192.0.2.1', 'reserved address 192.0.2.1'],
    ['198.51.100.1', 'reserved address 198.51.100.1'],
    ['203.0.113.1', 'reserved address 203.0.113.1'],
    ['198.18.0.1', 'reserved address 198.18.0.1'],
    ['192.0.0.8', 'reserved address 192.0.0.8'],
    ['2001:db8::1', 'reserved address 2001:db8::1'],
    ['2001:2::1', 'benchmarking address 2001:2::1'],
    ['2002:7f00:1::1', '6to4 address 2002:7f00:1::1'],
    ['2002:5db8:d822::1', '6to4 address'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'Teredo address'],
    ['64:ff9b:1::a00:1', 'local-use NAT64 address'],
    ['fec0::1', 'site-local address fec0::1'],
    ['100::1', 'discard-only address 100::1'],
    ['4000::1', 'reserved address 4000::1 (outside 2000::/3)'],
  ])('refuses %s', refuses);

  it.each([
    ['::ffff:127.0.0.1', 'loopback address 127.0.0.1'],
    ['::ffff:7f00:1', 'loopback address 127.0.0.1'],
    ['[::ffff:169.254.169.254]', 'link-local address 169.254.169.254'],
    ['::ffff:10.1.2.3', 'private address 10.1.2.3'],
    ['::ffff:0:127.0.0.1', 'loopback address 127.0.0.1'],
    ['::127.0.0.1', 'loopback address 127.0.0.1'],
    ['::7f00:1', 'loopback address 127.0.0.1'],
    ['64:ff9b::127.0.0.1', 'loopback address 127.0.0.1'],
    ['64:ff9b::a9fe:a9fe', 'link-local address 169.254.169.254'],
  ])('judges %s as its embedded IPv4 address', refuses);

  it('allows IPv6 forms embedding a public IPv4 address', () => {
    expect(addressVerdict('::ffff:8.8.8.8', none)).toEqual({ allowed: true });
    expect(addressVerdict('64:ff9b::808:808', none)).toEqual({ allowed: true });
  });

  it('judges legacy IPv4 spellings as the address they denote', () => {
    for (const address of ['127.1', '0x7f000001', '2130706433', '0177.0.0.1']) {
      expect(addressVerdict(address, none)).toEqual({ allowed: false, reason: 'loopback address 127.0.0.1' });
    }
  });

  it.each(['', 'localhost', 'example.com', '1.2.3.4.5', '256.0.0.1', '::g', '[127.0.0.1', 'http://127.0.0.1/'])('refuses %j as not an IP address', (address) => {
    expect(addressVerdict(address, none)).toEqual({ allowed: false, reason: 'not an IP address' });
  });

  it('allows what the allowlist holds', () => {
    const loopback = parseAllowlist(LOOPBACK_ALLOWLIST_ENTRIES);
    expect(addressVerdict('127.0.0.1', loopback)).toEqual({ allowed: true });
    expect(addressVerdict('127.8.9.10', loopback)).toEqual({ allowed: true });
    expect(addressVerdict('::1', loopback)).toEqual({ allowed: true });
    expect(addressVerdict('::ffff:127.0.0.1', loopback)).toEqual({ allowed: true });
    expect(addressVerdict('10.0.0.1', loopback).allowed).toBe(false);
    expect(addressVerdict('169.254.169.254', loopback).allowed).toBe(false);

    const custom = parseAllowlist(['10.1.2.3', ' 192.168.0.0/16 ', 'fd00::/8', '']);
    expect(addressVerdict('10.1.2.3', custom)).toEqual({ allowed: true });
    expect(addressVerdict('10.1.2.4', custom).allowed).toBe(false);
    expect(addressVerdict('192.168.44.5', custom)).toEqual({ allowed: true });
    expect(addressVerdict('fd12::1', custom)).toEqual({ allowed: true });
    expect(addressVerdict('fc00::1', custom).allowed).toBe(false);
    expect(addressVerdict('8.8.8.8', custom)).toEqual({ allowed: true });

    const mapped = parseAllowlist(['::ffff:10.0.0.0/104']);
    expect(addressVerdict('10.9.9.9', mapped)).toEqual({ allowed: true });
  });

  it('lets through the private addresses `admits` admits, never loopback, link-local or other special ranges', () => {
    const asked: string[] = [];
    const admitting = { ranges: [], admits: (address: string) => (asked.push(address), true) };
    for (const address of ['10.42.0.7', '172.16.3.4', '192.168.1.1', '100.64.0.9', 'fd00::7', '::ffff:10.42.0.7']) expect(addressVerdict(address, admitting)).toEqual({ allowed: true });
    expect(asked).toEqual(['10.42.0.7', '172.16.3.4', '192.168.1.1', '100.64.0.9', 'fd00::7', '10.42.0.7']);
    for (const address of ['127.0.0.1', '169.254.169.254', 'fe80::1', '0.0.0.0', '224.0.0.1', '::1', '::ffff:169.254.169.254']) expect(addressVerdict(address, admitting).allowed).toBe(false);
    const choosy = { ranges: [], admits: (address: string) => address === '10.42.0.7' };
    expect(addressVerdict('10.42.0.7', choosy)).toEqual({ allowed: true });
    expect(addressVerdict('10.42.0.8', choosy)).toEqual({ allowed: false, reason: 'private address 10.42.0.8' });
  });

  it('refuses every address in 10.0.0.0/8', () => {
    fc.assert(
      fc.property(fc.nat(255), fc.nat(255), fc.nat(255), (b, c, d) => {
        expect(addressVerdict(`10.${b}.${c}.${d}`, none)).toEqual({ allowed: false, reason: `private address 10.${b}.${c}.${d}` });
        expect(addressVerdict(`::ffff:10.${b}.${c}.${d}`, none).allowed).toBe(false);
      }),
    );
  });

  it('allows every address in an allowlisted IPv4 CIDR', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 0, max: 32 }), fc.integer({ min: 0, max: 0xffffffff }), (base, bits, host) => {
        const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
        const network = (base & mask) >>> 0;
        const address = (network | (host & ~mask)) >>> 0;
        const dotted = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
        const allowlist = parseAllowlist([`${dotted(network)}/${bits}`]);
        expect(addressVerdict(dotted(address), allowlist)).toEqual({ allowed: true });
      }),
    );
  });

  it('allows every address in an allowlisted IPv6 CIDR', () => {
    fc.assert(
      fc.property(fc.array(fc.nat(0xffff), { minLength: 8, maxLength: 8 }), fc.integer({ min: 0, max: 128 }), fc.array(fc.nat(0xffff), { minLength: 8, maxLength: 8 }), (base, bits, host) => {
        const parts = base.map((word, i) => {
          const keep = Math.max(0, Math.min(16, bits - i * 16));
          const mask = keep === 0 ? 0 : (0xffff << (16 - keep)) & 0xffff;
          return (word & mask) | ((host[i] as number) & ~mask & 0xffff);
        });
        const hex = (words: number[]) => words.map((w) => w.toString(16)).join(':');
        const allowlist = parseAllowlist([`${hex(base)}/${bits}`]);
        expect(addressVerdict(hex(parts), allowlist)).toEqual({ allowed: true });
      }),
    );
  });
});

describe('parseAllowlist', () => {
  it('parses CIDRs and single addresses', () => {
    const { ranges } = parseAllowlist(['127.0.0.0/8', '::1', '10.1.2.3']);
    expect(ranges.map(([address, bits]) => `${address.toString()}/${bits}`)).toEqual(['127.0.0.0/8', '::1/128', '10.1.2.3/32']);
    expect(parseAllowlist(LOOPBACK_ALLOWLIST_ENTRIES).ranges).toHaveLength(2);
    expect(LOOPBACK_ALLOWLIST_ENTRIES).toEqual(['127.0.0.0/8', '::1/128']);
  });

  it('throws naming the bad entry', () => {
    expect(() => parseAllowlist(['127.0.0.0/8', 'localhost'])).toThrow('invalid allowlist entry "localhost"');
    expect(() => parseAllowlist(['10.0.0.0/33'])).toThrow('invalid allowlist entry "10.0.0.0/33"');
    expect(() => parseAllowlist(['::/129'])).toThrow(/::\/129/);
    expect(() => parseAllowlist(['10.0.0.0/'])).toThrow(/10\.0\.0\.0\//);
  });
});
