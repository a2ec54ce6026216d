import * as dns from 'node:dns';
import * as net from 'node:net';
import ipaddr from 'ipaddr.js';
import { buildConnector } from 'undici';

/** Addresses a deployment lets outgoing requests reach although they are not public (parsed by {@link parseAllowlist}). */
export interface AddressAllowlist {
  readonly ranges: ReadonlyArray<[ipaddr.IPv4 | ipaddr.IPv6, number]>;
  /**
   * Private addresses let through besides `ranges`, asked per address (its plain form: `10.0.0.7`, `fd00::7`; an
   * IPv4-mapped IPv6 address as its IPv4): a queue project's own Kubernetes namespace. Only private, unique-local and
   * carrier-grade NAT addresses are asked; loopback, link-local (the cloud metadata address), multicast and the
   * other special ranges stay refused whatever it answers.
   */
  readonly admits?: (address: string) => boolean;
}

/** The ranges {@link AddressAllowlist.admits} may let through. */
const ADMISSIBLE_RANGES = new Set(['private', 'uniqueLocal', 'carrierGradeNat']);

/** Allowlist entries for destinations on the same host (development, tests): `127.0.0.0/8` and `::1`. */
export const LOOPBACK_ALLOWLIST_ENTRIES = ['127.0.0.0/8', '::1/128'];

/**
 * Parses allowlist entries: CIDRs (`127.0.0.0/8`, `fd00::/8`) or single addresses (`10.1.2.3`, `::1`),
 * IPv4 or IPv6. Surrounding whitespace is ignored and blank entries skipped (so a comma-split
 * environment variable may end with a comma).
 * @throws Error `invalid allowlist entry "<entry>"` naming the first entry that is neither
 */
export function parseAllowlist(entries: string[]): AddressAllowlist {
  const ranges: [ipaddr.IPv4 | ipaddr.IPv6, number][] = [];
  for (const entry of entries) {
    const text = entry.trim();
    if (text === '') continue;
    try {
      if (text.includes('/')) {
        ranges.push(ipaddr.parseCIDR(text));
      } else {
        const address = ipaddr.parse(text);
        ranges.push([address, address.kind() === 'ipv4' ? 32 : 128]);
      }
    } catch {
      throw new Error(`invalid allowlist entry ${JSON.stringify(entry)}: expected an IP address or a CIDR range`);
    }
  }
  return { ranges };
}

/** The decision on one address: allowed, or refused with a reason naming the range. */
export type AddressVerdict = { allowed: true } | { allowed: false; reason: string };

/** How reasons name ipaddr.js's special ranges. */
const RANGE_LABELS: Record<string, string> = {
  unspecified: 'unspecified',
  broadcast: 'broadcast',
  multicast: 'multicast',
  linkLocal: 'link-local',
  loopback: 'loopback',
  carrierGradeNat: 'carrier-grade NAT',
  private: 'private',
  reserved: 'reserved',
  as112: 'AS112',
  as112v6: 'AS112',
  amt: 'AMT',
  uniqueLocal: 'unique-local',
  deprecatedSiteLocal: 'site-local',
  discard: 'discard-only',
  rfc6052: 'local-use NAT64',
  '6to4': '6to4',
  teredo: 'Teredo',
  benchmarking: 'benchmarking',
  deprecatedOrchid: 'ORCHID',
  orchid2: 'ORCHIDv2',
  droneRemoteIdProtocolEntityTags: 'DRIP entity tag',
  segmentRouting: 'segment-routing',
};

/** 2000::/3, the only IPv6 space allocated for global unicast. */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');
const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96');

function allowlisted(address: ipaddr.IPv4 | ipaddr.IPv6, allowlist: AddressAllowlist): boolean {
  return allowlist.ranges.some(([range, bits]) => range.kind() === address.kind() && address.match(range, bits));
}

/** The IPv4 address in the last 32 bits of an IPv6 address. */
function lastIPv4(address: ipaddr.IPv6): ipaddr.IPv4 {
  return new ipaddr.IPv4(address.toByteArray().slice(12));
}

/**
 * The IPv4 address that connecting to `address` really reaches, for IPv6 forms that embed one:
 * IPv4-mapped `::ffff:a.b.c.d` (also written `::ffff:7f00:1`), IPv4-translated `::ffff:0:a.b.c.d`,
 * IPv4-compatible `::a.b.c.d` (not `::` and `::1`), and well-known-prefix NAT64 `64:ff9b::a.b.c.d`.
 */
function embeddedIPv4(address: ipaddr.IPv6): { ipv4: ipaddr.IPv4; form: string } | undefined {
  const range = address.range();
  if (range === 'ipv4Mapped') return { ipv4: address.toIPv4Address(), form: 'IPv4-mapped' };
  if (range === 'rfc6145') return { ipv4: lastIPv4(address), form: 'IPv4-translated' };
  if (range === 'rfc6052' && address.match(NAT64_WELL_KNOWN)) return { ipv4: lastIPv4(address), form: 'NAT64' };
  if (range !== 'unspecified' && range !== 'loopback' && address.parts.slice(0, 6).every((part) => part === 0)) {
    return { ipv4: lastIPv4(address), form: 'IPv4-compatible' };
  }
  return undefined;
}

function refuse(range: string, address: ipaddr.IPv4 | ipaddr.IPv6, suffix = ''): AddressVerdict {
  return { allowed: false, reason: `${RANGE_LABELS[range] ?? range} address ${address.toString()}${suffix}` };
}

/** Only globally routable unicast IPv4: ipaddr.js's `unicast` range (none of its special ranges). */
function judgeIPv4(address: ipaddr.IPv4, suffix = ''): AddressVerdict {
  const range = address.range();
  return range === 'unicast' ? { allowed: true } : refuse(range, address, suffix);
}

/**
 * Whether an outgoing request may connect to `address` (docs/queue.md, "Queue: SSRF guard": the queue worker asks
 * this for every address a destination host resolves to, and for IP-literal hosts; vector-gateway for an
 * index's own embedding provider). Pure: no lookup, no
 * socket. Rules:
 * 1. An address in the allowlist is allowed (IPv6 forms embedding an IPv4 address are matched as that
 *    IPv4 address, and also as themselves), and so is a private, unique-local or carrier-grade NAT address
 *    (an IPv4-mapped one as its IPv4) that the allowlist's `admits` admits.
 * 2. Otherwise only globally routable unicast is allowed. Refused, with a reason naming the range
 *    (`loopback address 127.0.0.1`): loopback, private (10/8, 172.16/12, 192.168/16), link-local
 *    (169.254/16 with the cloud metadata 169.254.169.254, fe80::/10), unique-local fc00::/7 (with AWS's
 *    fd00:ec2::254), carrier-grade NAT 100.64/10 (with Alibaba's 100.100.100.200), unspecified (0/8,
 *    ::), broadcast, multicast, reserved, documentation and benchmarking ranges and the other special
 *    ranges of ipaddr.js, IPv6 outside 2000::/3, 6to4 (2002::/16), Teredo (2001::/32), local-use NAT64
 *    (64:ff9b:1::/48).
 * 3. IPv4-mapped (`::ffff:127.0.0.1`, `::ffff:7f00:1`), IPv4-translated, IPv4-compatible and NAT64
 *    (`64:ff9b::/96`) IPv6 addresses are judged as their embedded IPv4 address.
 * `address` may carry surrounding brackets (`[::1]`, as `URL.hostname` gives IPv6) and an IPv6 zone;
 * the legacy IPv4 forms ipaddr.js parses (`127.1`, `0x7f000001`) are judged as the address they denote.
 * Anything else is refused with the reason `not an IP address`.
 */
export function addressVerdict(address: string, allowlist: AddressAllowlist): AddressVerdict {
  let text = address.trim();
  if (text.startsWith('[') && text.endsWith(']')) text = text.slice(1, -1);
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(text);
  } catch {
    return { allowed: false, reason: 'not an IP address' };
  }
  if (allowlisted(parsed, allowlist)) return { allowed: true };
  const admitted = (address: ipaddr.IPv4 | ipaddr.IPv6) => allowlist.admits !== undefined && ADMISSIBLE_RANGES.has(address.range()) && allowlist.admits(address.toString());
  if (parsed.kind() === 'ipv4') {
    const ipv4 = parsed as ipaddr.IPv4;
    if (allowlisted(ipv4.toIPv4MappedAddress(), allowlist) || admitted(ipv4)) return { allowed: true };
    return judgeIPv4(ipv4);
  }
  const ipv6 = parsed as ipaddr.IPv6;
  const embedded = embeddedIPv4(ipv6);
  if (embedded) {
    if (allowlisted(embedded.ipv4, allowlist) || (embedded.form === 'IPv4-mapped' && admitted(embedded.ipv4))) return { allowed: true };
    return judgeIPv4(embedded.ipv4, ` (${embedded.form} ${ipv6.toString()})`);
  }
  const range = ipv6.range();
  if (admitted(ipv6)) return { allowed: true };
  if (range !== 'unicast') return refuse(range, ipv6);
  if (!ipv6.match(GLOBAL_UNICAST_V6)) return refuse('reserved', ipv6, ' (outside 2000::/3)');
  return { allowed: true };
}

/** How a guarded connection fails: the error to raise for a refused address (`reason` as addressVerdict gives it). */
export type RefusedAddress = (reason: string) => Error;

/** `[::1]` → `::1`; other hosts unchanged. */
function stripBrackets(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/**
 * A `lookup` for `net.connect` / `tls.connect`: runs `resolve` (the real `dns.lookup` by default) and
 * fails with `refuse(reason)` when any resolved address is refused by {@link addressVerdict}, so the
 * socket never connects to it. Handles both the `all: true` form (several addresses; Node's
 * `autoSelectFamily` asks for it) and the single-address form. DNS errors pass through.
 */
export function guardedLookup(
  allowlist: AddressAllowlist,
  refuse: RefusedAddress,
  resolve: net.LookupFunction = dns.lookup as net.LookupFunction,
): net.LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, options, (error, address, family) => {
      if (error) return callback(error, address, family);
      const addresses = typeof address === 'string' ? [address] : address.map((entry) => entry.address);
      for (const candidate of addresses) {
        const verdict = addressVerdict(candidate, allowlist);
        if (!verdict.allowed) return callback(refuse(verdict.reason), options.all ? [] : '', 0);
      }
      callback(null, address, family);
    });
  };
}

/**
 * undici's connector with the SSRF guard in front (for `new Agent({connect})`): an IP-literal host is judged
 * before connecting, a DNS name is resolved through {@link guardedLookup} (every address it resolves to, at
 * connect time, so DNS rebinding cannot slip a refused address in after a check). A refused address fails the
 * connection with `refuse(reason)`. HTTP/1.1 only.
 *
 * @param timeoutMs a connection not made this long fails
 */
export function guardedConnector(allowlist: AddressAllowlist, options: { timeoutMs: number; refuse: RefusedAddress }): buildConnector.connector {
  const connect = buildConnector({ lookup: guardedLookup(allowlist, options.refuse), allowH2: false, timeout: options.timeoutMs });
  return (target, callback) => {
    const host = stripBrackets(target.hostname);
    if (net.isIP(host)) {
      const verdict = addressVerdict(host, allowlist);
      if (!verdict.allowed) return callback(options.refuse(verdict.reason), null);
    }
    return connect(target, callback);
  };
}
