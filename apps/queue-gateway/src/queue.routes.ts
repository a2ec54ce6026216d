import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { FastifyInstance } from 'fastify';
import {
  type ApiOperation,
  type DenialTable,
  type TenantApiErrors,
  TenantGate,
  limitDenials,
  operation,
  registerTenantApi,
} from '@restash/shared/feature-tenancy';
import {
  QueueError,
  bulkParameters,
  dlqView,
  encodeQueueError,
  eventView,
  headerRecord,
  messageView,
  parseBatch,
  parseCancelRequest,
  parseDlqBulk,
  parseDlqPage,
  parseEventsPage,
  parsePublish,
  pathId,
  publishDestination,
} from '@restash/queue/util-message';
import { QUEUE_CONFIG, type QueueGatewayConfig } from './config';
import { type Answer, type Endpoint, ok, publishContext } from './endpoint';
import { QueueMetrics } from './queue-metrics';
import { QueueService, type Session } from './queue.service';
import { SigningKeysService, keyEndpoints } from './keys.endpoints';
import { scheduleEndpoints } from './schedules.endpoints';
import { SchedulesService } from './schedules.service';
import { topicsEndpoints } from './topics.endpoints';
import { UrlGroupsService } from './url-groups.service';
import { flowControlEndpoints } from './flow-control.endpoints';
import { LanesService } from './lanes.service';
import { queuesEndpoints } from './queues.endpoints';
import { workflowEndpoints } from './workflows.endpoints';
import { WorkflowsService } from './workflows.service';
import { registerWorkflowHooks } from './workflow-hooks';
import { RegistryReader } from '@restash/shared/data-access-registry';

/**
 * The endpoints the official `@upstash/qstash` Client calls for publishing, messages, the DLQ, logs and keys
 * (docs/queue.md, "Queue: endpoints"). Longer prefixes come first; destinations stay raw (their `//` and query survive).
 */
export function messageEndpoints(s: QueueService): Endpoint[] {
  return [
    {
      method: 'POST',
      path: 'publish/',
      exact: false,
      write: true,
      name: 'publish',
      run: async (c) => {
        const destination = publishDestination(c.rest, c.request.url, c.query);
        const [result] = await s.publish(c.session, [parsePublish({ ...publishContext(c), destination, headers: headerRecord(c.request.raw.rawHeaders), body: c.body })]);
        // A URL group answers an array, one per endpoint (docs/queue.md, "Queue: endpoints").
        return { status: !Array.isArray(result) && result?.deduplicated ? 202 : 201, value: result };
      },
    },
    {
      method: 'POST',
      path: 'batch',
      exact: true,
      write: true,
      name: 'batch',
      run: async (c) => ok(await s.publish(c.session, parseBatch(c.body, publishContext(c)))),
    },
    { method: 'GET', path: 'messages/', exact: false, emptyRest: true, write: false, name: 'messages', run: async (c) => ok(messageView(await s.message(c.session, pathId(c.rest, 'message id')))) },
    {
      method: 'DELETE',
      path: 'messages/',
      exact: false,
      emptyRest: true, // `/v2/messages/`: an id left out, never the bulk cancel of `/v2/messages`
      write: true,
      name: 'messages',
      run: async (c) => {
        await s.cancel(c.session, pathId(c.rest, 'message id'));
        return ok({ cancelled: 1 });
      },
    },
    {
      method: 'DELETE',
      path: 'messages',
      exact: true,
      write: true,
      name: 'messages',
      run: async (c) => {
        const cancelled = await s.cancelMany(c.session, parseCancelRequest(bulkParameters(c.query, c.body)));
        return ok({ cancelled });
      },
    },
    {
      method: 'POST',
      path: 'dlq/retry/',
      exact: false,
      emptyRest: true, // `/v2/dlq/retry/`: an id left out, never the bulk retry of `/v2/dlq/retry`
      write: true,
      name: 'dlq',
      run: async (c) => {
        const [messageId] = await s.dlqRetry(c.session, [await s.dlqEntry(c.session, pathId(c.rest, 'DLQ id'))]);
        return { status: 201, value: { messageId } };
      },
    },
    {
      method: 'POST',
      path: 'dlq/retry',
      exact: true,
      write: true,
      name: 'dlq',
      run: async (c) => {
        const page = await s.dlqList(c.session, parseDlqBulk(bulkParameters(c.query, c.body)));
        const ids = await s.dlqRetry(c.session, page.items);
        return ok({ responses: ids.map((messageId) => ({ messageId })), ...(page.cursor ? { cursor: page.cursor } : {}) });
      },
    },
    {
      method: 'GET',
      path: 'dlq/',
      exact: false,
      write: false,
      name: 'dlq',
      run: async (c) => {
        const entry = await s.dlqEntry(c.session, pathId(c.rest, 'DLQ id'));
        return ok(dlqView(entry, (await s.failureCallbackStates(c.session, [entry])).get(entry.dlqId)));
      },
    },
    {
      method: 'DELETE',
      path: 'dlq/',
      exact: false,
      emptyRest: true, // `/v2/dlq/`: an id left out, never the bulk delete of `/v2/dlq`
      write: true,
      name: 'dlq',
      run: async (c) => {
        const dlqId = pathId(c.rest, 'DLQ id');
        if ((await s.dlqDelete(c.session, [dlqId])) === 0) throw new QueueError(404, `dlq message ${dlqId} not found`);
        return ok();
      },
    },
    {
      method: 'GET',
      path: 'dlq',
      exact: true,
      write: false,
      name: 'dlq',
      run: async (c) => {
        // `source=workflow` (the workflow SDK's dlq.list): the entries of workflow runs only.
        const source = c.query.get('source');
        if (source !== null && source !== 'workflow') throw QueueError.badRequest(`invalid source: ${JSON.stringify(source)} (expected workflow)`);
        const query = new URLSearchParams([...c.query].filter(([key]) => key !== 'source'));
        const page = await s.dlqList(c.session, parseDlqPage(query));
        const items = source === 'workflow' ? page.items.filter((entry) => entry.message.workflow !== undefined) : page.items;
        const callbacks = await s.failureCallbackStates(c.session, items);
        return ok({ messages: items.map((entry) => dlqView(entry, callbacks.get(entry.dlqId))), ...(page.cursor ? { cursor: page.cursor } : {}) });
      },
    },
    {
      method: 'DELETE',
      path: 'dlq',
      exact: true,
      write: true,
      name: 'dlq',
      run: async (c) => {
        const page = await s.dlqList(c.session, parseDlqBulk(bulkParameters(c.query, c.body)));
        const deleted = await s.dlqDelete(c.session, page.items.map((e) => e.dlqId));
        return ok({ deleted, ...(page.cursor ? { cursor: page.cursor } : {}) });
      },
    },
    { method: 'GET', path: 'events', exact: true, write: false, name: 'events', run: async (c) => ok(eventsAnswer(await s.events(c.session, parseEventsPage(c.query)), 'events')) },
    { method: 'GET', path: 'logs', exact: true, write: false, name: 'logs', run: async (c) => ok(eventsAnswer(await s.events(c.session, parseEventsPage(c.query)), 'logs')) },
    {
      method: 'GET',
      path: 'keys',
      exact: true,
      write: true,
      name: 'keys',
      run: async (c) => ok({ current: c.session.project.signingKeys.current, next: c.session.project.signingKeys.next }),
      },
  ];
}

/**
 * The methods that reach the Queue API's routes: those its operations use (the `*Endpoints` lists), and HEAD, PUT
 * and OPTIONS, which none uses, so that each path answers its own 405 with the `Allow` of its endpoints (404 for a
 * path that is no endpoint); any other method gets 405 from the shared bootstrap.
 */
export const QUEUE_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'];

/** The queue API's answers to the tenant gate's denials (docs/queue.md, "Queue: requests and errors"). */
export const QUEUE_DENIALS: DenialTable = {
  missing: [401, 'Unauthorized: send the token as Authorization: Bearer <QSTASH_TOKEN>'],
  unknown: [401, 'Unauthorized: unknown token'],
  'read-only': [403, 'Forbidden: this token is read-only'],
  ...limitDenials('project'),
  'registry-unavailable': [503, 'Service unavailable: the tenant registry cannot be reached'],
};

const NOT_FOUND = (path: string) => new QueueError(404, `Not found: ${path} is not an endpoint of the queue API (v2)`);

/** How the queue API answers errors: `{"error": <message>}` (docs/queue.md, "Queue: requests and errors"). */
export const QUEUE_ERRORS: TenantApiErrors = {
  methods: QUEUE_METHODS,
  encode: (_status, message) => encodeQueueError(message),
  type: QueueError,
  denials: QUEUE_DENIALS,
  notFound: NOT_FOUND,
  notAllowed: (method, path, allowed) => new QueueError(405, `Method ${method} is not allowed on ${path}; use ${allowed.join(' or ')}`),
  allowHeader: true,
};

/** The operation of an endpoint: found by method and path under `/v2/` (longer prefixes first), answered as JSON. */
function queueOperation(endpoint: Endpoint): ApiOperation<Session> {
  const { path } = endpoint;
  return operation<Session, string, undefined, Answer>({
    name: endpoint.name,
    methods: [endpoint.method],
    write: endpoint.write,
    match: (full) => {
      if (!full.startsWith('/v2/')) return undefined;
      const tail = full.slice(4);
      if (endpoint.exact) return tail === path || tail === `${path}/` ? '' : undefined;
      return tail.startsWith(path) && (tail.length > path.length || endpoint.emptyRest === true) ? tail.slice(path.length) : undefined;
    },
    run: (session, _input, call) =>
      endpoint.run({ session, rest: call.params, query: call.query, request: call.request, body: call.body ?? Buffer.alloc(0) }),
    encode: ({ status, value }) => ({ status, ...(value === undefined ? {} : { body: JSON.stringify(value) }) }),
  });
}

/**
 * The HTTP surface of the queue API: its endpoints on the shared tenant API routes (bearer tokens in the
 * header or the `qstash_token` query parameter, per-project limits, `{error}` errors, metrics). One
 * catch-all route, so that raw destination URLs reach the parser untouched.
 */
@Injectable()
export class QueueRoutes implements OnModuleInit {
  private readonly logger = new Logger('QueueRoutes');

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly service: QueueService,
    private readonly gate: TenantGate,
    private readonly metrics: QueueMetrics,
    @Inject(QUEUE_CONFIG) private readonly config: QueueGatewayConfig,
    private readonly schedules: SchedulesService,
    private readonly signingKeys: SigningKeysService,
    private readonly urlGroups: UrlGroupsService,
    private readonly lanes: LanesService,
    private readonly workflows: WorkflowsService,
    private readonly registry: RegistryReader,
  ) {}

  onModuleInit(): void {
    const fastify = this.adapterHost.httpAdapter.getInstance<FastifyInstance>();
    registerWorkflowHooks(fastify, {
      registry: this.registry,
      workflows: this.workflows,
      logger: this.logger,
      bodyLimitBytes: this.config.http.bodyLimitBytes,
    });
    registerTenantApi(fastify, {
      errors: QUEUE_ERRORS,
      credentials: { scheme: 'bearer', queryToken: 'qstash_token' },
      operations: [...messageEndpoints(this.service), ...topicsEndpoints(this.urlGroups), ...scheduleEndpoints(this.schedules), ...keyEndpoints(this.signingKeys), ...queuesEndpoints(this.lanes), ...flowControlEndpoints(this.lanes), ...workflowEndpoints(this.workflows)].map(queueOperation),
      open: (credentials) => this.service.authenticate(credentials),
      gate: this.gate,
      metrics: this.metrics,
      logger: this.logger,
      bodyLimitBytes: this.config.http.bodyLimitBytes,
      unreadAnswerBytes: this.config.http.unreadAnswerBytes,
      // DELETE too: the bulk endpoints take their filters as a JSON body from earlier SDKs (bulkParameters).
      bodyMethods: ['POST', 'PUT', 'PATCH', 'DELETE'],
    });
  }
}

function eventsAnswer(page: Awaited<ReturnType<QueueService['events']>>, key: 'events' | 'logs') {
  return { [key]: page.items.map(eventView), ...(page.cursor ? { cursor: page.cursor } : {}) };
}
