import { CoreV1Api, type KubeConfig, type KubernetesObject, type V1Pod, type V1Service, makeInformer } from '@kubernetes/client-node';
import ipaddr from 'ipaddr.js';

/**
 * The addresses each Kubernetes namespace owns, for queue projects with `destinations.inNamespace` (docs/workflow.md, "What
 * workflows do", apps inside the cluster): a pod's own addresses (not a `hostNetwork` pod's: those are its node's), and the cluster
 * IPs of Services with a selector (their endpoints are pods of the same namespace, which the endpoint controller
 * chooses; a Service without a selector could point anywhere, so it counts for nothing). Namespaces in `refused` (the
 * platform's own) own nothing. Pure: fed by {@link watchNamespaceAddresses} or by a test.
 */
export class NamespaceAddressBook {
  /** Per object (`<kind>/<namespace>/<name>`): its namespace and addresses. */
  private readonly objects = new Map<string, { namespace: string; addresses: string[] }>();
  /** Per namespace: address → how many objects hold it. */
  private readonly byNamespace = new Map<string, Map<string, number>>();

  constructor(private readonly refused: ReadonlySet<string>) {}

  /** Whether `address` (its plain form, as AddressAllowlist.admits gets it) belongs to `namespace`. */
  admits(namespace: string, address: string): boolean {
    if (this.refused.has(namespace)) return false;
    return (this.byNamespace.get(namespace)?.get(normalize(address) ?? '') ?? 0) > 0;
  }

  /** A pod was added or changed. */
  setPod(pod: V1Pod): void {
    const phase = pod.status?.phase;
    const ips = pod.spec?.hostNetwork || phase === 'Succeeded' || phase === 'Failed' ? [] : (pod.status?.podIPs?.map((p) => p.ip) ?? (pod.status?.podIP ? [pod.status.podIP] : []));
    this.set('pod', pod, ips);
  }

  /** A Service was added or changed. */
  setService(service: V1Service): void {
    const spec = service.spec;
    const selected = spec?.type !== 'ExternalName' && Object.keys(spec?.selector ?? {}).length > 0;
    const ips = selected ? (spec?.clusterIPs ?? (spec?.clusterIP ? [spec.clusterIP] : [])).filter((ip) => ip !== 'None') : [];
    this.set('service', service, ips);
  }

  /** A pod or Service was deleted. */
  remove(kind: 'pod' | 'service', object: KubernetesObject): void {
    this.set(kind, object, []);
  }

  private set(kind: 'pod' | 'service', object: KubernetesObject, ips: string[]): void {
    const namespace = object.metadata?.namespace ?? '';
    const key = `${kind}/${namespace}/${object.metadata?.name ?? ''}`;
    const before = this.objects.get(key);
    if (before) this.count(before.namespace, before.addresses, -1);
    const addresses = ips.map(normalize).filter((a): a is string => a !== undefined);
    if (addresses.length === 0) {
      this.objects.delete(key);
      return;
    }
    this.objects.set(key, { namespace, addresses });
    this.count(namespace, addresses, 1);
  }

  private count(namespace: string, addresses: string[], delta: number): void {
    const counts = this.byNamespace.get(namespace) ?? new Map<string, number>();
    for (const address of addresses) {
      const next = (counts.get(address) ?? 0) + delta;
      if (next > 0) counts.set(address, next);
      else counts.delete(address);
    }
    if (counts.size > 0) this.byNamespace.set(namespace, counts);
    else this.byNamespace.delete(namespace);
  }
}

/** An address in ipaddr.js's plain form (`10.0.0.7`, `fd00::7`; an IPv4-mapped IPv6 address as its IPv4), or undefined. */
function normalize(address: string): string | undefined {
  try {
    const parsed = ipaddr.process(address);
    return parsed.toString();
  } catch {
    return undefined;
  }
}

/** A running watch of pods and Services; {@link watchNamespaceAddresses}. */
export interface NamespaceWatch {
  stop(): Promise<void>;
}

/** How long a failed list or watch waits before it starts again, in ms. */
const RESTART_DELAY_MS = 5_000;

/**
 * Keeps `book` up to date with the pods and Services of every namespace (list, then watch; a failed watch starts
 * again after {@link RESTART_DELAY_MS}). Needs `list` and `watch` on pods and services cluster-wide.
 * @returns once both have been listed once (so that a delivery right after boot sees every address), and the watch
 * @param onError told of every failed list or watch (which then restarts)
 */
export async function watchNamespaceAddresses(config: KubeConfig, book: NamespaceAddressBook, onError: (what: string, error: unknown) => void): Promise<NamespaceWatch> {
  const core = config.makeApiClient(CoreV1Api);
  const pods = makeInformer<V1Pod>(config, '/api/v1/pods', () => core.listPodForAllNamespaces());
  const services = makeInformer<V1Service>(config, '/api/v1/services', () => core.listServiceForAllNamespaces());
  pods.on('add', (pod) => book.setPod(pod));
  pods.on('update', (pod) => book.setPod(pod));
  pods.on('delete', (pod) => book.remove('pod', pod));
  services.on('add', (service) => book.setService(service));
  services.on('update', (service) => book.setService(service));
  services.on('delete', (service) => book.remove('service', service));
  let stopped = false;
  const timers = new Set<NodeJS.Timeout>();
  for (const [what, informer] of [['pods', pods], ['services', services]] as const) {
    informer.on('error', (error: unknown) => {
      onError(what, error);
      if (stopped) return;
      const timer = setTimeout(() => {
        timers.delete(timer);
        if (!stopped) void informer.start().catch((e: unknown) => onError(what, e));
      }, RESTART_DELAY_MS);
      timers.add(timer);
    });
  }
  await Promise.all([pods.start(), services.start()]);
  return {
    stop: async () => {
      stopped = true;
      for (const timer of timers) clearTimeout(timer);
      await Promise.all([pods.stop(), services.stop()]);
    },
  };
}
