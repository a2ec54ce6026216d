import { type UpgradeState, nextUpgradeStep } from './rolling-upgrade';

const state = (over: Partial<UpgradeState> = {}): UpgradeState => ({
  pods: [
    { name: 'redis-cache-0', revision: 'old', ready: true },
    { name: 'redis-cache-1', revision: 'old', ready: true },
    { name: 'redis-cache-2', revision: 'old', ready: true },
  ],
  updateRevision: 'new',
  replicas: 3,
  primary: 'redis-cache-0',
  onlineReplicas: 2,
  sentinelsSettled: true,
  ...over,
});

describe('nextUpgradeStep', () => {
  it('is done when every pod runs the current revision, whatever else is going on', () => {
    const pods = state().pods.map((p) => ({ ...p, revision: 'new' }));
    expect(nextUpgradeStep(state({ pods }))).toEqual({ kind: 'done' });
    expect(nextUpgradeStep(state({ pods: pods.slice(1), primary: undefined, onlineReplicas: 0 }))).toEqual({ kind: 'done' });
  });

  it('deletes an outdated replica first, the highest ordinal, never the primary', () => {
    expect(nextUpgradeStep(state())).toMatchObject({ kind: 'delete', pod: 'redis-cache-2' });
    expect(nextUpgradeStep(state({ primary: 'redis-cache-2' }))).toMatchObject({ kind: 'delete', pod: 'redis-cache-1' });
  });

  it('fails over once only the primary is outdated, and only with settled sentinels', () => {
    const pods = state().pods.map((p) => (p.name === 'redis-cache-0' ? p : { ...p, revision: 'new' }));
    expect(nextUpgradeStep(state({ pods }))).toMatchObject({ kind: 'failover', from: 'redis-cache-0' });
    expect(nextUpgradeStep(state({ pods, sentinelsSettled: false }))).toEqual({ kind: 'wait', reason: 'the sentinels are rolling' });
  });

  it('waits while a server is not ready, missing, or still copying, or while no primary is known', () => {
    const pods = state().pods;
    expect(nextUpgradeStep(state({ pods: [pods[0]!, { ...pods[1]!, ready: false }, pods[2]!] }))).toEqual({ kind: 'wait', reason: 'redis-cache-1 is not ready yet' });
    expect(nextUpgradeStep(state({ pods: pods.slice(0, 2) }))).toEqual({ kind: 'wait', reason: 'a server is not ready yet' });
    expect(nextUpgradeStep(state({ onlineReplicas: 1 }))).toEqual({ kind: 'wait', reason: '1 of 2 replicas are online' });
    expect(nextUpgradeStep(state({ primary: undefined }))).toEqual({ kind: 'wait', reason: 'no primary is known' });
  });
});
