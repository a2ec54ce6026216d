import type { EventLogger } from '@restash/shared/util-http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { QueueProjectRecord, RegistryReader } from '@restash/shared/data-access-registry';
import { useRawBodies } from '@restash/shared/util-http';
import { QueueError, type HeaderMap, canonicalHeaderName, encodeQueueError, isWorkflowEventId, isWorkflowRunId } from '@restash/queue/util-message';
import type { WorkflowWaits } from '@restash/queue/feature-messages';

/** Where the webhooks of workflow runs are (`@upstash/workflow` `LazyCreateWebhookStep`): `/v2/workflows/hooks/<UserID>/<runId>/<eventId>`. */
export const WORKFLOW_HOOKS_PATH = '/v2/workflows/hooks/';

/** The methods a webhook takes: any a caller may use. */
const HOOK_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

/** The three path segments of a webhook URL, or undefined for a path that is none. */
function hookTarget(url: string): { userId: string; runId: string; eventId: string } | undefined {
  const path = url.split('?')[0] ?? '';
  if (!path.startsWith(WORKFLOW_HOOKS_PATH)) return undefined;
  const parts = path.slice(WORKFLOW_HOOKS_PATH.length).split('/');
  if (parts.length !== 3) return undefined;
  try {
    const [userId = '', runId = '', eventId = ''] = parts.map(decodeURIComponent);
    return userId && isWorkflowRunId(runId) && isWorkflowEventId(eventId) ? { userId, runId, eventId } : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The webhooks of workflow runs (docs/workflow.md, "What workflows do"), outside the token-checked API: a webhook's caller has
 * no token; the URL names the project (the `UserID` of its tokens, generateQueueToken), the run and the event, and the
 * run id and event id are random (the SDK's nanoids), so the URL is the capability, as on QStash. A body is read only
 * once the project is known (at most `bodyLimitBytes`); a URL that names no project, run or webhook answers 404.
 */
export function registerWorkflowHooks(
  fastify: FastifyInstance,
  deps: { registry: RegistryReader; waitsOf: (project: QueueProjectRecord) => WorkflowWaits; logger: EventLogger; bodyLimitBytes: number },
): void {
  const projects = new WeakMap<FastifyRequest, Promise<QueueProjectRecord | null>>();
  const project = (request: FastifyRequest): Promise<QueueProjectRecord | null> => {
    let found = projects.get(request);
    if (!found) {
      const target = hookTarget(request.url);
      found = target ? deps.registry.queueProject(target.userId) : Promise.resolve(null);
      projects.set(request, found);
    }
    return found;
  };
  void fastify.register(async (app) => {
    useRawBodies(app, {
      bodyLimitBytes: deps.bodyLimitBytes,
      logger: deps.logger,
      encode: (_status, message) => encodeQueueError(message),
      bodyMethods: ['POST', 'PUT', 'PATCH', 'DELETE'],
      admitBody: async (request) => (await project(request).catch(() => null)) !== null,
    });
    app.route({
      method: HOOK_METHODS,
      url: `${WORKFLOW_HOOKS_PATH}*`,
      exposeHeadRoute: false,
      handler: async (request, reply) => {
        const send = (status: number, body: string) => reply.code(status).header('content-type', 'application/json').send(body);
        const target = hookTarget(request.url);
        let record: QueueProjectRecord | null;
        try {
          record = await project(request);
        } catch {
          return send(503, encodeQueueError('Service unavailable: the tenant registry cannot be reached'));
        }
        if (!target || !record) return send(404, encodeQueueError(`Not found: ${request.url.split('?')[0]} is no webhook`));
        const header: HeaderMap = {};
        for (const [name, value] of Object.entries(request.headers)) if (value !== undefined) header[canonicalHeaderName(name)] = Array.isArray(value) ? value : [value];
        const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        try {
          await deps.waitsOf(record).webhook(
            { tenant: record.tenant, project: record },
            target.runId,
            target.eventId,
            { method: request.method, proto: request.protocol, host: request.headers.host ?? request.hostname, url: request.url, header, body },
            { nowMs: Date.now(), callerIp: request.ip, retries: record.retries },
          );
        } catch (error) {
          if (error instanceof QueueError) return send(error.status, encodeQueueError(error.message));
          throw error;
        }
        return send(200, '{}');
      },
    });
  });
}
