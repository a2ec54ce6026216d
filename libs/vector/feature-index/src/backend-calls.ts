import { Logger } from '@nestjs/common';
import { RepeatLimiter } from '@restash/shared/util-http';
import { EngineUnavailableError } from '@restash/vector/data-access-qdrant';
import { VectorError } from '@restash/vector/util-query';
import type { IndexSession, RegistryCall, VectorObserver } from './ports';

/**
 * The Vector API's one wrapper around its backends (docs/operations.md, "When an engine fails"): a Qdrant call that cannot reach or
 * fails on the engine becomes 503 in the API's shape; a control-Redis call goes through the tenant gate's
 * registryCall (503 `registry-unavailable`); each failure is counted and logged, a failure repeating alike
 * once per 10 s.
 */
export class BackendCalls {
  private readonly logger = new Logger('VectorIndexService');
  /** An engine or provider failing every request alike is logged once per 10 s. */
  readonly repeats = new RepeatLimiter();

  constructor(
    private readonly observer: VectorObserver,
    private readonly registryCall: RegistryCall,
  ) {}

  /**
   * Runs a Qdrant call.
   * @throws VectorError 503 when the engine cannot be reached or fails; any other error as thrown
   */
  async engine<T>(session: IndexSession, run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      if (!(error instanceof EngineUnavailableError)) throw error;
      this.observer.backendError(session.tenant, 'engine');
      this.repeats.logEvent(this.logger, 'warn', 'engine.call-failed', { engine: 'qdrant', tenant: session.tenant, index: session.index.id, status: error.status, error });
      const what = error.status === undefined ? 'cannot be reached' : 'failed on this index';
      throw new VectorError(503, `Service unavailable: the vector engine ${what}; retry later`);
    }
  }

  /** Runs a call on the index state in the control Redis. @throws TenantDenied `registry-unavailable` */
  state<T>(session: IndexSession, run: () => Promise<T>): Promise<T> {
    return this.registryCall(session.tenant, run);
  }

  /** Counts and logs (once per 10 s alike) a failure of the embedding provider of the session's index. */
  embedderFailed(session: IndexSession, event: string, fields: Record<string, unknown>): void {
    this.observer.backendError(session.tenant, 'embedder');
    this.repeats.logEvent(this.logger, 'warn', event, { engine: 'embedder', tenant: session.tenant, index: session.index.id, ...fields });
  }
}
