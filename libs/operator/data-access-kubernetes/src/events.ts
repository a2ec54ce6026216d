import { CoreV1Api, CoreV1Event, KubernetesObject, PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { isNotFound } from './errors';
import { OPERATOR_FIELD_MANAGER } from './kubernetes-client';

/** `core/v1` Event types. */
export type EventType = 'Normal' | 'Warning';

export interface EventRecorderOptions {
  /** `source.component` / `reportingComponent` (default `restash-operator`). */
  component?: string;
  /** `source.host` / `reportingInstance` (default: the host name, the pod name in a pod). */
  instance?: string;
  /** An identical event (same object, type, reason, message) within this window bumps `count` (default 10 min). */
  aggregateWindowMs?: number;
  /** How many recent events are remembered for aggregation (default 1024; the oldest is forgotten). */
  maxRemembered?: number;
  now?: () => Date;
}

interface Remembered {
  name: string;
  namespace: string;
  count: number;
  last: number;
}

/**
 * Writes `core/v1` Events about objects (what `kubectl describe` shows under Events): one Event per
 * distinct (object uid, type, reason, message); repeating it within `aggregateWindowMs` increments
 * the existing Event's `count` and `lastTimestamp` instead of creating another, as client-go's
 * recorder does, so a resource failing on every backoff retry shows one line with a count.
 */
export class EventRecorder {
  private readonly component: string;
  private readonly instance: string;
  private readonly windowMs: number;
  private readonly maxRemembered: number;
  private readonly now: () => Date;
  private readonly recent = new Map<string, Remembered>();

  constructor(
    private readonly core: CoreV1Api,
    options: EventRecorderOptions = {},
  ) {
    this.component = options.component ?? OPERATOR_FIELD_MANAGER;
    this.instance = options.instance ?? hostname();
    this.windowMs = options.aggregateWindowMs ?? 10 * 60_000;
    this.maxRemembered = options.maxRemembered ?? 1024;
    this.now = options.now ?? (() => new Date());
  }

  /**
   * Records an Event about `involved` in its namespace (`default` for a cluster-scoped object).
   * `reason` is a short CamelCase word, `message` a sentence for humans.
   *
   * @returns the Event as stored
   * @throws ApiException when the API server refuses it (events are best-effort: callers log and go on)
   */
  async record(involved: KubernetesObject, type: EventType, reason: string, message: string): Promise<CoreV1Event> {
    const { name = '', namespace = 'default', uid = '' } = involved.metadata ?? {};
    const key = JSON.stringify([uid || `${namespace}/${name}`, involved.kind, type, reason, message]);
    const now = this.now();
    const seen = this.recent.get(key);
    if (seen && now.getTime() - seen.last < this.windowMs) {
      try {
        const event = await this.core.patchNamespacedEvent(
          { name: seen.name, namespace: seen.namespace, body: { count: seen.count + 1, lastTimestamp: now.toISOString() }, fieldManager: this.component },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        );
        this.remember(key, { ...seen, count: seen.count + 1, last: now.getTime() });
        return event;
      } catch (error) {
        if (!isNotFound(error)) throw error; // expired (events live 1 h by default): create a new one
      }
    }
    const event = await this.core.createNamespacedEvent({
      namespace,
      body: {
        metadata: { name: `${name}.${now.getTime().toString(16)}${randomBytes(4).toString('hex')}`, namespace },
        involvedObject: {
          apiVersion: involved.apiVersion,
          kind: involved.kind,
          name,
          namespace: involved.metadata?.namespace,
          uid: uid || undefined,
          resourceVersion: involved.metadata?.resourceVersion,
        },
        type,
        reason,
        message,
        count: 1,
        firstTimestamp: now,
        lastTimestamp: now,
        source: { component: this.component, host: this.instance },
        reportingComponent: this.component,
        reportingInstance: this.instance,
      },
    });
    this.remember(key, { name: event.metadata?.name ?? '', namespace, count: 1, last: now.getTime() });
    return event;
  }

  private remember(key: string, entry: Remembered): void {
    this.recent.delete(key);
    this.recent.set(key, entry);
    if (this.recent.size > this.maxRemembered) this.recent.delete(this.recent.keys().next().value as string);
  }
}
