import { Inject, Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { type Job, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { Readiness } from '@restash/shared/util-http';
import { RegistryReader } from '@restash/shared/data-access-registry';
import { DELIVERY_QUEUE, QueueStore } from '@restash/queue/data-access-store';
import { DeliveryError, type DeliveryResponse, HttpDeliverer } from '@restash/queue/data-access-delivery';
import {
  type MessageEvent,
  type QueueMessage,
  callbackMessage,
  callbackPayload,
  deliveryRequest,
  dlqIdOf,
  deliveryDecision,
  parseAllowlist,
} from '@restash/queue/util-message';
import { WORKER_CONFIG, type QueueWorkerConfig } from './config';
import { type AttemptOutcome, WorkerMetrics } from './worker-metrics';

/** Thrown by an attempt that will be retried: BullMQ's backoff strategy waits `delayMs` before the next one. */
class RetryLater extends Error {
  constructor(
    readonly delayMs: number,
    reason: string,
  ) {
    super(reason);
    this.name = 'RetryLater';
  }
}

/** What one attempt got: an HTTP answer, or the reason there was none. */
type Attempt = { response: DeliveryResponse; error?: undefined } | { response?: undefined; error: string };

/**
 * Delivers the queue's messages (spec 002 part B; upstash-compat.md §4.4): each BullMQ job is one message;
 * an attempt sends it signed (`Upstash-Signature`, the project's current key) through the SSRF-guarded
 * client. A 2xx is delivered. Any other answer or no answer is retried after QStash's backoff (or the
 * message's `Upstash-Retry-Delay`, or the destination's `Retry-After`) until `maxRetries` retries are
 * spent; then, or at once for a 489 with `Upstash-NonRetryable-Error: true`, the message goes to the DLQ
 * and its failure callback is enqueued. Every answered attempt enqueues the callback, if any.
 *
 * At least once: the job completes only after its outcome (DLQ entry, callback message) is stored, and a
 * worker that dies mid-attempt loses its lock, so BullMQ hands the job to another worker. Outcome writes
 * use ids fixed per message and attempt, so a redone attempt does not duplicate them.
 *
 * A message whose project has left the registry (its tenant or project deleted, issue 11) is dropped: not
 * delivered, and nothing written under the project, before an attempt or after one under way.
 */
@Injectable()
export class DeliveryWorker implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(DeliveryWorker.name);
  private readonly control: Redis;
  private readonly queueRedis: Redis;
  private readonly registry: RegistryReader;
  private readonly store: QueueStore;
  private readonly deliverer: HttpDeliverer;
  private worker: Worker<QueueMessage> | undefined;
  private workerRedis: Redis | undefined;

  constructor(
    @Inject(WORKER_CONFIG) private readonly config: QueueWorkerConfig,
    private readonly metrics: WorkerMetrics,
    readiness: Readiness,
  ) {
    this.control = new Redis(config.controlRedisUrl, { maxRetriesPerRequest: 2 });
    // The store's commands (events, DLQ, callbacks) of concurrent deliveries share socket writes; BullMQ's
    // worker gets a connection of its own below, since it issues blocking commands.
    this.queueRedis = new Redis(config.store.redisUrl, { maxRetriesPerRequest: null, enableAutoPipelining: true });
    this.registry = new RegistryReader(this.control, { cacheTtlMs: config.registryCacheTtlMs });
    this.store = new QueueStore(this.queueRedis, config.store.options);
    this.deliverer = new HttpDeliverer({
      allowlist: parseAllowlist(config.destinationAllowlist),
      maxRedirects: config.maxRedirects,
      maxResponseBytes: config.maxResponseBytes,
    });
    readiness.register('control-redis', () => this.control.ping());
    readiness.register('queue-redis', () => this.queueRedis.ping());
    readiness.register('worker', async () => {
      if (!this.worker?.isRunning()) throw new Error('the BullMQ worker is not running');
    });
  }

  async onModuleInit(): Promise<void> {
    await this.registry.start();
    this.worker = new Worker<QueueMessage>(DELIVERY_QUEUE, (job) => this.process(job), {
      connection: (this.workerRedis = new Redis(this.config.store.redisUrl, { maxRetriesPerRequest: null })),
      prefix: this.config.store.options.prefix,
      concurrency: this.config.concurrency,
      lockDuration: this.config.lockDurationMs,
      stalledInterval: this.config.stalledIntervalMs,
      maxStalledCount: this.config.maxStalledCount,
      settings: { backoffStrategy: (_attempts, _type, error) => (error instanceof RetryLater ? error.delayMs : 0) },
    });
    this.worker.on('error', (error) => this.logger.warn(`worker: ${String(error)}`));
    this.worker.on('failed', (job, error) => {
      if (!(error instanceof RetryLater)) this.logger.error(`message ${job?.id ?? '?'} failed unexpectedly: ${String(error)}`);
    });
  }

  /** Stops taking messages, lets attempts under way finish, then closes the connections. */
  async onApplicationShutdown(): Promise<void> {
    await this.worker?.close();
    this.workerRedis?.disconnect();
    this.deliverer.close();
    await this.store.close();
    await this.registry.close();
    this.control.disconnect();
    this.queueRedis.disconnect();
  }

  /** One attempt of one message. @throws RetryLater when it will be retried */
  private async process(job: Job<QueueMessage>): Promise<void> {
    const message = job.data;
    const retried = job.attemptsMade;
    const started = performance.now();
    const project = await this.registry.queueProject(message.project);
    const tenant = project?.tenant ?? '';
    const finish = (outcome: AttemptOutcome) => this.metrics.observeAttempt(tenant, outcome, (performance.now() - started) / 1000);
    if (!project) {
      // The tenant or project was removed (its teardown purges its messages): drop the message without
      // delivering it or writing anything under the project, which a re-created project of the same name
      // would otherwise see.
      finish('dropped');
      return;
    }
    // A cancel of a pending message removes its job; a cancel during an attempt leaves a request that the
    // attempt's failure path sees, or that the next attempt sees here (first attempts have none to see).
    if (retried > 0 && (await this.store.cancelRequested(message.messageId))) {
      await this.event(message, 'CANCELLED');
      finish('cancelled');
      return;
    }
    if (retried === 0) this.metrics.observeLag(tenant, (Date.now() - message.notBefore) / 1000);

    const attempt = await this.attempt(message, retried, project.signingKeys.current);
    if (!(await this.registry.queueProject(message.project))) {
      // Deleted during the attempt: no retry, DLQ entry, callback or event under a project being purged.
      finish('dropped');
      return;
    }
    const now = Date.now();
    const { response } = attempt;
    if (response && message.callback) {
      const payload = callbackPayload(message, response, retried, this.config.maxResponseBytes);
      await this.store.enqueue(callbackMessage(message, 'callback', payload, now, this.config.callbackRetries, retried));
    }
    const decision = deliveryDecision({
      answer: response,
      retried,
      maxRetries: message.maxRetries,
      retryDelayExpression: message.retryDelayExpression,
      nowMs: now,
    });
    if (response && decision.kind === 'delivered') {
      await this.event(message, 'DELIVERED', { responseStatus: response.status });
      finish('delivered');
      return;
    }

    const error = attempt.error ?? `the destination answered ${response?.status}`;
    // A cancel requested during the attempt stops its retries and keeps the message out of the DLQ.
    if (await this.store.cancelRequested(message.messageId)) {
      await this.event(message, 'CANCELLED');
      finish('cancelled');
      return;
    }
    if (decision.kind === 'retry') {
      const { delayMs } = decision;
      await this.event(message, 'RETRY', { error, nextDeliveryTime: now + delayMs, ...(response ? { responseStatus: response.status } : {}) });
      finish('retry');
      throw new RetryLater(delayMs, error);
    }

    const dlqId = dlqIdOf(message);
    await this.store.putDlq({
      dlqId,
      message,
      failedAt: now,
      ...(response
        ? { responseStatus: response.status, responseHeader: response.header, responseBody: response.body.toString('base64') }
        : { error }),
    });
    if (message.failureCallback) {
      const outcome = response ?? { status: 0, header: {}, body: Buffer.alloc(0) };
      const payload = callbackPayload(message, outcome, retried, this.config.maxResponseBytes, dlqId);
      await this.store.enqueue(callbackMessage(message, 'failure-callback', payload, now, this.config.callbackRetries));
    }
    await this.event(message, 'FAILED', { error, ...(response ? { responseStatus: response.status } : {}) });
    finish('failed');
  }

  private async attempt(message: QueueMessage, retried: number, signingKey: string): Promise<Attempt> {
    const request = await deliveryRequest(message, retried, signingKey, Math.floor(Date.now() / 1000));
    const timeoutMs = Math.min(message.timeoutMs ?? this.config.deliveryTimeoutMs, this.config.deliveryTimeoutMs);
    try {
      return { response: await this.deliverer.deliver({ ...request, timeoutMs }) };
    } catch (error) {
      if (error instanceof DeliveryError) return { error: `${error.reason}: ${error.message}` };
      throw error;
    }
  }

  private event(message: QueueMessage, state: MessageEvent['state'], extra: Partial<MessageEvent> = {}): Promise<void> {
    return this.store.addEvent(message.project, {
      time: Date.now(),
      state,
      messageId: message.messageId,
      url: message.url,
      ...(message.labels ? { labels: message.labels } : {}),
      ...extra,
    });
  }
}
