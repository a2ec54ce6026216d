import type { Redis } from 'ioredis';
import type { CallbackSettings, FlowControl, HeaderMap, WorkflowInvoker, WorkflowRawStep } from '@restash/queue/util-message';
import { withScripts } from './redis-keys';

/** The run scripts, defined on the connection (EVALSHA). */
interface RunScripts {
  restashWorkflowRecord(...args: string[]): Promise<unknown>;
  restashWorkflowStart(...args: string[]): Promise<unknown>;
  restashWorkflowEnd(...args: string[]): Promise<unknown>;
  restashWorkflowResume(...args: string[]): Promise<unknown>;
}

/** Where a run stands (QStash's `workflowState` of `GET /v2/workflows/logs`). */
export type WorkflowRunState = 'RUN_STARTED' | 'RUN_SUCCESS' | 'RUN_FAILED' | 'RUN_CANCELED';

/**
 * The configuration a run was triggered with, applied to every step message of the run (docs/workflow.md, "What workflows do": the SDK
 * sends retries, retry delay, flow control, failure URL, labels and the caller's headers with the first message only).
 */
export interface WorkflowRunConfig {
  maxRetries: number;
  /** The first message's forwarded headers (`Upstash-Forward-*`, the label's among them), without Content-Type. */
  header?: HeaderMap;
  retryDelayExpression?: string;
  flowControl?: FlowControl;
  failureCallback?: string;
  failureCallbackSettings?: CallbackSettings;
  labels?: string[];
  /** The run that invoked this one (`context.invoke`): told how this one ended. */
  invoker?: WorkflowInvoker;
}

/** A run as stored: its endpoint, times (Unix ms), state, first message and configuration. */
export interface WorkflowRun {
  runId: string;
  url: string;
  createdAt: number;
  state: WorkflowRunState;
  /** When it ended (success, failure or cancel), Unix ms. */
  endedAt?: number;
  /** The run's initial request body, base64. */
  initialBody: string;
  initialMessageId: string;
  config: WorkflowRunConfig;
  /** What the workflow returned (the body of `DELETE /v2/workflows/runs/<id>?cancel=false`), base64. */
  result?: string;
}

/** Where a listing of runs goes on: after this run. */
export interface RunCursor {
  createdAt: number;
  runId: string;
}

/** What {@link WorkflowRunStore.recordStep} found. */
export type RecordOutcome =
  /** The run's steps up to the message's own (a redone delivery gets the prefix it got the first time), as JSON texts. */
  | { kind: 'recorded'; createdAt: number; steps: string[] }
  /** Another message already recorded this step: its delivery would only repeat work. */
  | { kind: 'duplicate' }
  | { kind: 'ended'; state: WorkflowRunState }
  | { kind: 'unknown' };

/**
 * Records a step (KEYS: run hash, steps list, seen hash; ARGV: message id, step key, entry JSON) unless the run is
 * unknown or over, or another message recorded the same step key; returns the run's steps up to the message's own.
 * The seen hash maps each step key to the message that recorded it, and `#<message id>` to its entry's position.
 */
const RECORD_STEP = `
local run = redis.call('HMGET', KEYS[1], 'state', 'createdAt')
if not run[1] then return {'unknown'} end
if run[1] ~= 'RUN_STARTED' then return {'ended', run[1]} end
local owner = redis.call('HGET', KEYS[3], ARGV[2])
if owner and owner ~= ARGV[1] then return {'duplicate'} end
local at
if owner then
  at = tonumber(redis.call('HGET', KEYS[3], '#' .. ARGV[1]))
else
  at = redis.call('RPUSH', KEYS[2], ARGV[3]) - 1
  redis.call('HSET', KEYS[3], ARGV[2], ARGV[1], '#' .. ARGV[1], at)
end
return {'recorded', run[2], redis.call('LRANGE', KEYS[2], 0, at)}
`;

/** Creates a run unless it exists (KEYS: run hash, index, messages set; ARGV: run id, createdAt, then field/value pairs). */
const START_RUN = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 3))
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
return 1
`;

/** Ends a run that is under way (KEYS: run hash; ARGV: state, endedAt, result or ''): returns its state before, or false. */
const END_RUN = `
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return false end
if state == 'RUN_STARTED' then
  redis.call('HSET', KEYS[1], 'state', ARGV[1], 'endedAt', ARGV[2])
  if ARGV[3] ~= '' then redis.call('HSET', KEYS[1], 'result', ARGV[3]) end
end
return state
`;

/**
 * Resumes a failed run (KEYS: run hash, seen hash; ARGV: step key, failed message id, new message id, then the run's
 * other keys' names are not needed): the run is under way again, and the step the failed message recorded belongs to
 * the message that replaces it (at the same position). Returns the state before, or false for an unknown run.
 */
const RESUME_RUN = `
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return false end
if state ~= 'RUN_FAILED' then return state end
redis.call('HSET', KEYS[1], 'state', 'RUN_STARTED')
redis.call('HDEL', KEYS[1], 'endedAt')
if redis.call('HGET', KEYS[2], ARGV[1]) == ARGV[2] then
  local at = redis.call('HGET', KEYS[2], '#' .. ARGV[2])
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
  if at then redis.call('HSET', KEYS[2], '#' .. ARGV[3], at) end
end
return state
`;

/**
 * The workflow runs of every project, on the queue Redis (docs/workflow.md, "What workflows do";
 * docs/architecture.md, "Each API on its engine"): per run `<prefix>:wf:<project>:run:<runId>` (hash: url, createdAt, state, endedAt, initialBody,
 * initialMessageId, config, result), `…:steps:<runId>` (list of {@link WorkflowRawStep} JSON, the initial request
 * first), `…:seen:<runId>` (hash: step key → the message that recorded it), `…:msgs:<runId>` (set of the run's
 * message ids, for a cancel) and `…:waits:<runId>` (set of the events it waited for); per project `<prefix>:wf-runs:<project>` (sorted set of run ids by createdAt). A run
 * that ends keeps its keys for `retentionMs`, then they expire.
 */
export class WorkflowRunStore {
  private readonly redis: Redis & RunScripts;

  constructor(
    redis: Redis,
    private readonly options: { prefix: string; retentionMs: number },
  ) {
    // Defined now (EVALSHA, not the script's text per call), before an auto-pipelining connection's first pipeline.
    this.redis = withScripts<RunScripts>(redis, {
      restashWorkflowRecord: { numberOfKeys: 3, lua: RECORD_STEP },
      restashWorkflowStart: { numberOfKeys: 2, lua: START_RUN },
      restashWorkflowEnd: { numberOfKeys: 1, lua: END_RUN },
      restashWorkflowResume: { numberOfKeys: 2, lua: RESUME_RUN },
    });
  }

  /**
   * Creates the run of a first message unless a run with that id exists in the project.
   * @returns whether it was created (false: a duplicate trigger)
   */
  async start(project: string, run: Omit<WorkflowRun, 'state' | 'endedAt' | 'result'>): Promise<boolean> {
    const fields = ['url', run.url, 'createdAt', String(run.createdAt), 'state', 'RUN_STARTED', 'initialBody', run.initialBody, 'initialMessageId', run.initialMessageId, 'config', JSON.stringify(run.config)];
    return (await this.redis.restashWorkflowStart(this.key('run', project, run.runId), this.indexKey(project), run.runId, String(run.createdAt), ...fields)) === 1;
  }

  /** Removes a run that {@link start} created but whose first message could not be published. */
  async forget(project: string, runId: string): Promise<void> {
    await Promise.all([this.redis.del(...this.runKeys(project, runId)), this.redis.zrem(this.indexKey(project), runId)]);
  }

  /**
   * A run of the project, or null (unknown, another project's, or expired); its `initialBody` is empty unless
   * `options.initialBody`.
   */
  async get(project: string, runId: string, options: { initialBody?: boolean } = {}): Promise<WorkflowRun | null> {
    // The initial request (any size) only when asked: most callers want the state and the configuration.
    const fields = options.initialBody ? [...RUN_FIELDS, 'initialBody'] : RUN_FIELDS;
    const values = await this.redis.hmget(this.key('run', project, runId), ...fields);
    const hash: Record<string, string> = {};
    fields.forEach((field, i) => {
      const value = values[i];
      if (value !== null && value !== undefined) hash[field] = value;
    });
    return hash.state ? runOf(runId, hash) : null;
  }

  /** Notes a message of the run (for {@link messageIds}). */
  async addMessage(project: string, runId: string, messageId: string): Promise<void> {
    await this.redis.sadd(this.key('msgs', project, runId), messageId);
  }

  /** Notes that the run waits (or waited) for an event, so that its end removes its waiters. */
  async addWait(project: string, runId: string, eventId: string): Promise<void> {
    await this.redis.sadd(this.key('waits', project, runId), eventId);
  }

  /** The events the run waited for. */
  waitedEvents(project: string, runId: string): Promise<string[]> {
    return this.redis.smembers(this.key('waits', project, runId));
  }

  /** The ids of every message published for the run. */
  messageIds(project: string, runId: string): Promise<string[]> {
    return this.redis.smembers(this.key('msgs', project, runId));
  }

  /**
   * Records a step of the run under `stepKey` ({@link workflowStepKey}) by the message that delivers it, once: the
   * same message again records nothing new; another message with the same key is a duplicate.
   * @returns the run's steps, the new one last, or why there are none
   */
  async recordStep(project: string, runId: string, stepKey: string, entry: WorkflowRawStep): Promise<RecordOutcome> {
    const reply = (await this.redis.restashWorkflowRecord(this.key('run', project, runId), this.key('steps', project, runId), this.key('seen', project, runId), entry.messageId, stepKey, JSON.stringify(entry))) as unknown[];
    const kind = String(reply[0]);
    if (kind === 'recorded') return { kind, createdAt: Number(reply[1]), steps: reply[2] as string[] };
    if (kind === 'ended') return { kind, state: String(reply[1]) as WorkflowRunState };
    return kind === 'duplicate' ? { kind } : { kind: 'unknown' };
  }

  /**
   * What a message joining a run needs of it, in the round trip that also notes the messages in the run (for a
   * cancel; a message noted whose publish then fails is harmless): its state, creation time and configuration.
   * @returns null for an unknown run
   */
  async join(project: string, runId: string, messageIds: string[]): Promise<Pick<WorkflowRun, 'state' | 'createdAt' | 'config'> | null> {
    // Two commands sent together (one round trip on an auto-pipelining connection), not a MULTI: ioredis copies every
    // script defined on the connection (BullMQ's dozens) into each MULTI's pipeline, which cost the gateway more than
    // the rest of a step's publish (bench/workflow profile).
    const [[state, createdAt, config]] = await Promise.all([
      this.redis.hmget(this.key('run', project, runId), 'state', 'createdAt', 'config'),
      messageIds.length > 0 ? this.redis.sadd(this.key('msgs', project, runId), ...messageIds) : Promise.resolve(0),
    ]);
    if (!state) return null;
    return { state: state as WorkflowRunState, createdAt: Number(createdAt), config: JSON.parse(config ?? '{"maxRetries":0}') as WorkflowRunConfig };
  }

  /** The steps recorded so far of a run under way, or null when the run is unknown or over (`GET /v2/workflows/runs/<id>`). */
  async steps(project: string, runId: string): Promise<WorkflowRawStep[] | null> {
    const [state, steps] = await Promise.all([this.redis.hget(this.key('run', project, runId), 'state'), this.redis.lrange(this.key('steps', project, runId), 0, -1)]);
    return state === 'RUN_STARTED' ? steps.map((raw) => JSON.parse(raw) as WorkflowRawStep) : null;
  }

  /** The steps recorded of a run, whatever its state (the logs). */
  async recordedSteps(project: string, runId: string): Promise<WorkflowRawStep[]> {
    return (await this.redis.lrange(this.key('steps', project, runId), 0, -1)).map((raw) => JSON.parse(raw) as WorkflowRawStep);
  }

  /**
   * Ends a run under way with `state`; its keys then expire after the retention. A run already over keeps its state.
   * @param result what the workflow returned, base64 (success only)
   * @returns the state before, or null for an unknown run
   */
  async end(project: string, runId: string, state: Exclude<WorkflowRunState, 'RUN_STARTED'>, nowMs: number, result = ''): Promise<WorkflowRunState | null> {
    const before = (await this.redis.restashWorkflowEnd(this.key('run', project, runId), state, String(nowMs), result)) as string | null;
    if (before === null) return null;
    await Promise.all(this.runKeys(project, runId).map((key) => this.redis.pexpire(key, this.options.retentionMs)));
    return before as WorkflowRunState;
  }

  /**
   * Puts a failed run under way again (the workflow DLQ's resume), its keys no longer expiring: the step `stepKey`
   * recorded by `failedMessageId` (the message that failed) now belongs to `newMessageId`, which redelivers it.
   * @returns the state before (only RUN_FAILED changes), or null for an unknown run
   */
  async resume(project: string, runId: string, stepKey: string, failedMessageId: string, newMessageId: string): Promise<WorkflowRunState | null> {
    const before = (await this.redis.restashWorkflowResume(this.key('run', project, runId), this.key('seen', project, runId), stepKey, failedMessageId, newMessageId)) as string | null;
    if (before === 'RUN_FAILED') await Promise.all(this.runKeys(project, runId).map((key) => this.redis.persist(key)));
    return before as WorkflowRunState | null;
  }

  /**
   * Changes the configuration of a run that exists (the workflow DLQ's resume with `Upstash-Retries` or flow
   * control): the step messages published from now on take it.
   * @returns whether the run exists
   */
  async reconfigure(project: string, runId: string, change: Partial<Pick<WorkflowRunConfig, 'maxRetries' | 'flowControl'>>): Promise<boolean> {
    const key = this.key('run', project, runId);
    const config = await this.redis.hget(key, 'config');
    if (config === null) return false;
    await this.redis.hset(key, 'config', JSON.stringify({ ...(JSON.parse(config) as WorkflowRunConfig), ...change }));
    return true;
  }

  /**
   * Runs of the project, newest first (by createdAt, then run id, both descending): at most `count`, those after
   * `after` when given. Runs expired since they were indexed are skipped (and dropped from the index), so a page may
   * hold fewer than `count`.
   * @returns the runs, and a cursor when more follow
   */
  async list(project: string, count: number, after?: RunCursor): Promise<{ runs: WorkflowRun[]; cursor?: RunCursor }> {
    const key = this.indexKey(project);
    // Runs created in the same millisecond as the cursor's share its score: read past those already listed.
    const equal = after ? await this.redis.zcount(key, after.createdAt, after.createdAt) : 0;
    const raw = await this.redis.zrevrangebyscore(key, after ? String(after.createdAt) : '+inf', '-inf', 'WITHSCORES', 'LIMIT', 0, equal + count + 1);
    const entries: RunCursor[] = [];
    for (let i = 0; i + 1 < raw.length; i += 2) entries.push({ runId: raw[i] as string, createdAt: Number(raw[i + 1]) });
    const next = entries.filter((e) => !after || e.createdAt < after.createdAt || e.runId < after.runId);
    const page = next.slice(0, count);
    const runs: WorkflowRun[] = [];
    const gone: string[] = [];
    for (const { runId } of page) {
      const run = await this.get(project, runId);
      if (run) runs.push(run);
      else gone.push(runId);
    }
    if (gone.length > 0) await this.redis.zrem(key, ...gone);
    const last = page.at(-1);
    return next.length > count && last ? { runs, cursor: last } : { runs };
  }

  /** Deletes every run of the project (tenant teardown). */
  async purgeProject(project: string): Promise<void> {
    const keys: string[] = [this.indexKey(project)];
    let cursor = '0';
    do {
      const [next, found] = await this.redis.scan(cursor, 'MATCH', `${this.options.prefix}:wf:${globEscape(project)}:*`, 'COUNT', 1000);
      cursor = next;
      keys.push(...found);
    } while (cursor !== '0');
    for (let i = 0; i < keys.length; i += 500) await this.redis.del(...keys.slice(i, i + 500));
  }

  private runKeys(project: string, runId: string): string[] {
    return (['run', 'steps', 'seen', 'msgs', 'waits'] as const).map((part) => this.key(part, project, runId));
  }

  private key(part: 'run' | 'steps' | 'seen' | 'msgs' | 'waits', project: string, runId: string): string {
    return `${this.options.prefix}:wf:${project}:${part}:${runId}`;
  }

  private indexKey(project: string): string {
    return `${this.options.prefix}:wf-runs:${project}`;
  }
}

/** The fields of a run's hash read by {@link WorkflowRunStore.get}, all but `initialBody`. */
const RUN_FIELDS = ['url', 'createdAt', 'state', 'endedAt', 'initialMessageId', 'config', 'result'];

function runOf(runId: string, hash: Record<string, string>): WorkflowRun {
  const run: WorkflowRun = {
    runId,
    url: hash.url ?? '',
    createdAt: Number(hash.createdAt),
    state: hash.state as WorkflowRunState,
    initialBody: hash.initialBody ?? '',
    initialMessageId: hash.initialMessageId ?? '',
    config: JSON.parse(hash.config ?? '{"maxRetries":0}') as WorkflowRunConfig,
  };
  if (hash.endedAt) run.endedAt = Number(hash.endedAt);
  if (hash.result) run.result = hash.result;
  return run;
}

/** `text` with the glob characters of Redis's MATCH escaped. */
function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}
