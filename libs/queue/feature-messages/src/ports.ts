import type { QueueProjectRecord, RuntimeStore } from '@restash/shared/data-access-registry';
import type { LaneStore, Publisher, QueueStore, ScheduleStore, UrlGroupStore, WorkflowRunStore, WorkflowWaiterStore } from '@restash/queue/data-access-store';

/**
 * The ports of the queue API's logic (docs/queue.md, "What the Queue API does"; docs/workflow.md, "What workflows
 * do"): what the services of this library need from the world, injected by apps/queue-gateway/src/app.module.ts and
 * faked in unit tests (src/testing/fakes.ts). Each is a part of a data-access class of libs/queue/data-access-store
 * on the queue Redis.
 */

/**
 * What a call on a project's data needs of its session: the tenant (metrics, logs) and the project. The app's
 * session (the tenant gate's grant besides) is one.
 */
export interface ProjectScope {
  tenant: string;
  project: QueueProjectRecord;
}

/** Messages, the DLQ and events (QueueStore). */
export type MessageStore = Pick<
  QueueStore,
  'publish' | 'message' | 'cancelRequested' | 'cancel' | 'pendingMessageIds' | 'dlqList' | 'dlqEntry' | 'putDlq' | 'dlqDelete' | 'events'
>;

/** Publishing parsed messages: URL groups, deduplication, workflow runs (Publisher). */
export type Publishing = Pick<Publisher, 'publish' | 'reportToInvoker'>;

/** The workflow runs (WorkflowRunStore). */
export type RunStore = Pick<
  WorkflowRunStore,
  'get' | 'steps' | 'recordedSteps' | 'end' | 'waitedEvents' | 'messageIds' | 'list' | 'addWait' | 'resume' | 'reconfigure'
>;

/** The steps of runs waiting for events (WorkflowWaiterStore). */
export type WaiterStore = Pick<WorkflowWaiterStore, 'register' | 'unregister' | 'claimForNotify' | 'restore' | 'list' | 'removeRun'>;

/** Queues and flow-control keys ("lanes", LaneStore). */
export type LanePort = Pick<
  LaneStore,
  | 'upsertQueue'
  | 'queueInfos'
  | 'queueInfo'
  | 'deleteQueue'
  | 'setQueuePaused'
  | 'flowControlInfos'
  | 'flowControlInfo'
  | 'setFlowControlPaused'
  | 'resetRate'
  | 'pin'
  | 'unpin'
  | 'workersConcurrency'
  | 'activeCount'
>;

/** The shared deliveries, as far as the messages being delivered are counted (QueueStore). */
export type DeliveriesQueue = Pick<QueueStore, 'sharedActiveCount'>;

/** The schedules (ScheduleStore). */
export type SchedulePort = Pick<ScheduleStore, 'upsert' | 'get' | 'list' | 'delete' | 'setPaused' | 'lastTick' | 'nextRun'>;

/** The URL groups (UrlGroupStore). */
export type UrlGroupPort = Pick<UrlGroupStore, 'get' | 'list' | 'addEndpoints' | 'removeEndpoints' | 'delete'>;

/** The rotation of a queue project's signing keys in the registry (RuntimeStore on the control Redis). */
export type SigningKeyRotation = Pick<RuntimeStore, 'rotateQueueSigningKeys'>;

/** Where published messages and backend failures are counted (queue-gateway's Prometheus metrics, QueueMetrics). */
export interface QueueObserver {
  /** One failed call of a tenant's request to the queue Redis. */
  backendError(tenant: string, kind: 'queue'): void;
  /** One published message: created, or answered with an earlier message's id (`duplicate`). */
  countPublished(tenant: string, duplicate: boolean): void;
}
