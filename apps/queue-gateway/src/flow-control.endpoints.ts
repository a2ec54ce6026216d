import {
  MAX_FLOW_CONTROL_PARALLELISM,
  MAX_FLOW_CONTROL_RATE,
  QueueError,
  parseBoundedInt,
  parsePeriod,
} from '@restash/queue/util-message';
import { type Endpoint, at, done, ok, under } from './endpoint';
import type { LanesService } from '@restash/queue/feature-messages';

/** A flow-control key from a path remainder: percent-decoded, any characters (a `/` included). @throws QueueError 400 */
function flowControlKey(raw: string): string {
  try {
    const key = decodeURIComponent(raw);
    if (key !== '') return key;
  } catch {
    // falls through
  }
  throw QueueError.badRequest(`invalid flow control key in path: ${JSON.stringify(raw)}`);
}

/**
 * The query of `POST /v2/flowControl/{key}/pin`: `parallelism` (1..1000), `rate` (1..100000) and `period`
 * (seconds or a duration, 1 s to 7 days), at least one.
 * @throws QueueError 400 naming the parameter
 */
export function parsePin(query: URLSearchParams): { parallelism?: number; rate?: number; periodS?: number } {
  const out: { parallelism?: number; rate?: number; periodS?: number } = {};
  const parallelism = query.get('parallelism');
  const rate = query.get('rate');
  const period = query.get('period');
  if (parallelism !== null) out.parallelism = parseBoundedInt(parallelism, 'parallelism', 1, MAX_FLOW_CONTROL_PARALLELISM);
  if (rate !== null) out.rate = parseBoundedInt(rate, 'rate', 1, MAX_FLOW_CONTROL_RATE);
  if (period !== null) out.periodS = parsePeriod(period, 'period');
  if (Object.keys(out).length === 0) throw QueueError.badRequest('pin needs parallelism, rate or period');
  return out;
}

/**
 * `POST /v2/flowControl/{key}/unpin`: `parallelism=true` and/or `rate=true` (any other value: false).
 * @throws QueueError 400 when neither is true
 */
export function parseUnpin(query: URLSearchParams): { parallelism: boolean; rate: boolean } {
  const out = { parallelism: query.get('parallelism') === 'true', rate: query.get('rate') === 'true' };
  if (!out.parallelism && !out.rate) throw QueueError.badRequest('unpin needs parallelism=true or rate=true');
  return out;
}

/**
 * The flow-control endpoints (docs/queue.md, "Queue: queues and flow control";
 * `client.flowControl` of `@upstash/qstash`): `GET /v2/flowControl?search=`, `GET /v2/flowControl/{key}`,
 * `POST /v2/flowControl/{key}/pause|resume|resetRate|reset|pin|unpin` (`reset` is QStash's changelog name for
 * `resetRate`), `GET /v2/globalParallelism`. A key is known once a message was published with it; an unknown key is 404.
 */
export function flowControlEndpoints(s: LanesService): Endpoint[] {
  return [
    {
      method: 'POST',
      route: under('flowControl/'),
      write: true,
      name: 'flowControl',
      run: done(async (c) => {
        const match = /^(.+)\/(pause|resume|resetRate|reset|pin|unpin)$/.exec(c.rest);
        if (!match) throw new QueueError(404, `Not found: /v2/flowControl/${c.rest}`);
        const key = flowControlKey(match[1] as string);
        const kind = match[2] === 'reset' ? 'resetRate' : (match[2] as 'pause' | 'resume' | 'resetRate' | 'pin' | 'unpin');
        if (kind === 'pin') await s.flowControlAction(c.session, key, { kind, ...parsePin(c.query) });
        else if (kind === 'unpin') await s.flowControlAction(c.session, key, { kind, ...parseUnpin(c.query) });
        else await s.flowControlAction(c.session, key, { kind });
      }),
    },
    { method: 'GET', route: under('flowControl/'), write: false, name: 'flowControl', run: async (c) => ok(await s.flowControl(c.session, flowControlKey(c.rest))) },
    {
      method: 'GET',
      route: at('flowControl'),
      write: false,
      name: 'flowControl',
      run: async (c) => ok(await s.flowControls(c.session, c.query.get('search') ?? undefined)),
    },
    { method: 'GET', route: at('globalParallelism'), write: false, name: 'globalParallelism', run: async (c) => ok(await s.globalParallelism(c.session)) },
  ];
}
