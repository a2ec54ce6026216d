import type { Redis } from 'ioredis';
import { serverRunId } from '@restash/shared/data-access-redis';
import { type EventLogger, logEvent } from '@restash/shared/util-http';
import { REGISTRY_CHANNEL, registryKeys } from './records';

/**
 * The Redis servers the platform itself keeps data on (docs/kv.md, "KV: one Redis server per database"): the control
 * Redis (the registry) and the queue's Redis (every project's messages, DLQ and events). No KV database may be
 * served from one, nor wiped on one, whatever its URL calls it (`localhost` for `127.0.0.1`, a DNS alias, another
 * logical database: FLUSHALL empties them all).
 */
export type PlatformRole = 'control' | 'queue';

/** The prefix of a platform server's binding (RegistryWriter's bind script refuses to take such a binding over). */
export const PLATFORM_OWNER = 'platform:';

/** What a server binding (`restash:v1:kv:server:<run_id>`) holds for a platform server: `platform:<role>`. */
export function platformOwner(role: PlatformRole): string {
  return `${PLATFORM_OWNER}${role}`;
}

/** The platform role a server binding names (see {@link platformOwner}), or undefined when it names a KV database (or nothing). */
export function platformRoleOf(owner: string | null | undefined): PlatformRole | undefined {
  return owner?.startsWith(PLATFORM_OWNER) ? (owner.slice(PLATFORM_OWNER.length) as PlatformRole) : undefined;
}

/**
 * Claims `server` for the platform in the registry on `control`: its binding becomes `platform:<role>`, which
 * kv-gateway never serves a KV database from and a tenant's teardown never wipes (RuntimeStore.bindKvServer
 * does not take it over). Claimed now when `server` is ready, and again after every reconnect, since a restarted
 * server has a new `run_id`. A claim that fails (either Redis down) is logged as `platform.claim.failed` (warn) and
 * tried again every {@link CLAIM_RETRY_MS} until it is made; a KV database found bound to the server (served from it
 * before the claim) is logged as `platform.claim.taken-over` (error: its tenant could read the platform's data, so a
 * platform engineer should drop that database and check the server) and announced on {@link REGISTRY_CHANNEL}, so that
 * kv-gateway stops serving it at once. Events: docs/operations.md, "Logs".
 * @returns a function that stops claiming (at shutdown)
 */
export function claimPlatformServer(control: Redis, server: Redis, role: PlatformRole, log: EventLogger): () => void {
  const engine = role === 'control' ? 'control-redis' : 'queue-redis';
  let retry: NodeJS.Timeout | undefined;
  let stopped = false;
  const claim = () => {
    clearTimeout(retry);
    serverRunId(server)
      .then((runId) => control.set(registryKeys.kvServer(runId), platformOwner(role), 'GET').then((before) => ({ runId, before })))
      .then(async ({ runId, before }) => {
        if (before === null || platformRoleOf(before) !== undefined) return;
        logEvent(log, 'error', 'platform.claim.taken-over', {
          engine,
          runId,
          database: before,
          text: `the ${role} Redis (run_id ${runId}) was bound to KV database ${before}, which may have read and changed its data; now claimed for the platform`,
        });
        // Announced: every kv-gateway replica drops its sessions, and the database's next request is refused.
        await control.publish(REGISTRY_CHANNEL, registryKeys.kvServer(runId));
      })
      .catch((error: unknown) => {
        if (stopped) return;
        logEvent(log, 'warn', 'platform.claim.failed', { engine, error, retryInMs: CLAIM_RETRY_MS });
        retry = setTimeout(claim, CLAIM_RETRY_MS).unref();
      });
  };
  server.on('ready', claim);
  if (server.status === 'ready') claim();
  return () => {
    stopped = true;
    clearTimeout(retry);
    server.off('ready', claim);
  };
}

/** How long {@link claimPlatformServer} waits before it tries a failed claim again, in ms. */
export const CLAIM_RETRY_MS = 5_000;
