import { CoordinationV1Api, V1MicroTime } from '@kubernetes/client-node';
import { claimedLeaseSpec, LeaderElector, leaseHeldByOther } from './leader-election';

describe('leaseHeldByOther', () => {
  const spec = { holderIdentity: 'b', leaseDurationSeconds: 15 };

  it('counts another holder as holding until leaseDurationSeconds after the record was observed to change', () => {
    expect(leaseHeldByOther(spec, 'a', 1_000, 1_000)).toBe(true);
    expect(leaseHeldByOther(spec, 'a', 1_000, 15_999)).toBe(true);
    expect(leaseHeldByOther(spec, 'a', 1_000, 16_000)).toBe(false);
  });

  it('never counts our own Lease, a released Lease or no Lease', () => {
    expect(leaseHeldByOther(spec, 'b', 1_000, 1_000)).toBe(false);
    expect(leaseHeldByOther({ ...spec, holderIdentity: '' }, 'a', 1_000, 1_000)).toBe(false);
    expect(leaseHeldByOther(undefined, 'a', 1_000, 1_000)).toBe(false);
  });
});

describe('claimedLeaseSpec', () => {
  const now = new Date('2026-03-01T10:00:00.123Z');

  it('a new Lease: holder, duration, both times now with microsecond precision, no transition', () => {
    const spec = claimedLeaseSpec(undefined, 'a', now, 15);
    expect(JSON.parse(JSON.stringify(spec))).toEqual({
      holderIdentity: 'a',
      leaseDurationSeconds: 15,
      acquireTime: '2026-03-01T10:00:00.123000Z',
      renewTime: '2026-03-01T10:00:00.123000Z',
      leaseTransitions: 0,
    });
  });

  it('a renewal keeps acquireTime and the transition count', () => {
    const current = { holderIdentity: 'a', leaseDurationSeconds: 15, acquireTime: '2026-03-01T09:00:00.000000Z' as unknown as V1MicroTime, leaseTransitions: 4 };
    const spec = claimedLeaseSpec(current, 'a', now, 15);
    expect(spec.acquireTime).toBe(current.acquireTime);
    expect(spec.leaseTransitions).toBe(4);
    expect(JSON.stringify(spec.renewTime)).toBe('"2026-03-01T10:00:00.123000Z"');
  });

  it('a takeover (from another holder or a released Lease) counts a transition and keeps unmanaged fields', () => {
    const current = { holderIdentity: 'b', leaseDurationSeconds: 15, leaseTransitions: 4, preferredHolder: 'c' };
    expect(claimedLeaseSpec(current, 'a', now, 15)).toMatchObject({ holderIdentity: 'a', leaseTransitions: 5, preferredHolder: 'c' });
    expect(claimedLeaseSpec({ ...current, holderIdentity: '' }, 'a', now, 15).leaseTransitions).toBe(5);
  });
});

describe('LeaderElector', () => {
  const coordination = {} as CoordinationV1Api;
  const base = { coordination, namespace: 'ns', name: 'lease', identity: 'a' };

  it('refuses timings where a leader could outlive its Lease', () => {
    expect(() => new LeaderElector({ ...base, leaseDurationSec: 10, renewDeadlineSec: 10 })).toThrow(RangeError);
    expect(() => new LeaderElector({ ...base, renewDeadlineSec: 2, retryPeriodSec: 2 })).toThrow(RangeError);
    expect(() => new LeaderElector({ ...base, leaseDurationSec: 15.5 })).toThrow(RangeError);
    expect(new LeaderElector(base).isLeader).toBe(false);
  });
});
