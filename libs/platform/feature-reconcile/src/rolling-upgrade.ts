/** One server pod of a replicated database, as its StatefulSet made it. */
export interface ServerPod {
  name: string;
  /** Its `controller-revision-hash` label: the StatefulSet revision (pod template) it runs. */
  revision: string;
  /** Its Ready condition is True, and it is not being deleted. */
  ready: boolean;
}

/** What {@link nextUpgradeStep} reads: the servers, their StatefulSet, the sentinels and the replication. */
export interface UpgradeState {
  pods: ServerPod[];
  /** The StatefulSet's `status.updateRevision`: the revision of its current pod template. */
  updateRevision: string;
  /** The servers the spec asks for (primary included). */
  replicas: number;
  /** The primary's pod, as the sentinels name it; undefined when no primary is known. */
  primary: string | undefined;
  /** Replicas the primary lists as `online`. */
  onlineReplicas: number;
  /** The sentinels' StatefulSet runs its current template on every pod, all ready. */
  sentinelsSettled: boolean;
}

/** The next step of a rolling upgrade (see {@link nextUpgradeStep}). */
export type UpgradeStep =
  | { kind: 'done' }
  | { kind: 'wait'; reason: string }
  | { kind: 'delete'; pod: string; reason: string }
  | { kind: 'failover'; from: string; reason: string };

/** A StatefulSet pod's ordinal (`redis-cache-2` → 2). */
const ordinal = (pod: string) => Number(pod.slice(pod.lastIndexOf('-') + 1));

/**
 * The next step of rolling a replicated database's servers onto their StatefulSet's current template (a new Redis
 * image, new settings; issue 32, docs/operations.md, "KV databases: upgrades"), one pod at a time, never the primary while a replica
 * is outdated: replicas first (the highest ordinal first; each is deleted and the StatefulSet, `updateStrategy:
 * OnDelete`, makes it again from the current template), then a failover that makes an upgraded replica the primary,
 * then the old primary, a replica by then. Nothing is done while a server is not ready, a replica is not `online` (it
 * still copies the primary), no primary is known, or the sentinels themselves are still rolling (they must agree on
 * the failover).
 */
export function nextUpgradeStep(state: UpgradeState): UpgradeStep {
  const outdated = state.pods.filter((p) => p.revision !== state.updateRevision);
  if (outdated.length === 0) return { kind: 'done' };
  const unready = state.pods.filter((p) => !p.ready).map((p) => p.name);
  if (state.pods.length < state.replicas || unready.length > 0) {
    return { kind: 'wait', reason: `${unready.length > 0 ? unready.join(', ') : 'a server'} is not ready yet` };
  }
  if (state.primary === undefined) return { kind: 'wait', reason: 'no primary is known' };
  if (state.onlineReplicas < state.replicas - 1) return { kind: 'wait', reason: `${state.onlineReplicas} of ${state.replicas - 1} replicas are online` };
  const replica = outdated.filter((p) => p.name !== state.primary).sort((a, b) => ordinal(b.name) - ordinal(a.name))[0];
  if (replica) return { kind: 'delete', pod: replica.name, reason: `replica ${replica.name} runs revision ${replica.revision}, not ${state.updateRevision}` };
  if (!state.sentinelsSettled) return { kind: 'wait', reason: 'the sentinels are rolling' };
  const wasPrimary = outdated.find((p) => p.name === state.primary);
  if (wasPrimary) return { kind: 'failover', from: wasPrimary.name, reason: `primary ${wasPrimary.name} runs revision ${wasPrimary.revision}, not ${state.updateRevision}; every replica is upgraded` };
  return { kind: 'done' };
}
