import {
  type DynamicModule,
  Inject,
  Injectable,
  type InjectionToken,
  type ModuleMetadata,
  type OnApplicationShutdown,
  type OnModuleInit,
  type Provider,
  type Type,
} from '@nestjs/common';
import { API_ERRORS, type ApiErrors } from './api-errors';
import { type HttpService, type HttpServiceConfig, type WorkerService, type WorkerServiceConfig, logStartFailure, startHttpService, startWorkerService } from './bootstrap';
import { ObservabilityModule } from './observability.module';

/**
 * The whole `main` of a service with an API port (docs/operations.md, "Logs"): loads its configuration, starts it with
 * {@link startHttpService} on the root module made from that configuration, and when either fails logs
 * `service.failed` (logStartFailure) and exits 1.
 * @returns the running service
 */
export function runHttpService<C extends { http: HttpServiceConfig }>(name: string, load: () => C, rootModule: (config: C) => DynamicModule): Promise<HttpService | undefined> {
  return runService(name, () => {
    const config = load();
    return startHttpService(rootModule(config), config.http);
  });
}

/**
 * The whole `main` of a service without an API port (docs/operations.md, "Logs"), as {@link runHttpService} with
 * {@link startWorkerService}.
 */
export function runWorkerService<C extends { service: WorkerServiceConfig }>(name: string, load: () => C, rootModule: (config: C) => DynamicModule): Promise<WorkerService | undefined> {
  return runService(name, () => {
    const config = load();
    return startWorkerService(rootModule(config), config.service);
  });
}

/** The started service, or (past a failure, where `process.exit` does return) undefined. */
async function runService<S>(name: string, start: () => Promise<S>): Promise<S | undefined> {
  try {
    return await start();
  } catch (error) {
    logStartFailure(name, error);
    process.exit(1);
  }
}

/** What a service's root module holds besides ObservabilityModule (see {@link serviceModule}). */
export interface ServiceModuleOptions {
  /** The service's configuration and its injection token. */
  config: { token: InjectionToken; value: unknown };
  /** The API's errors (provided as API_ERRORS), for a service with an API port. */
  errors?: ApiErrors;
  /** The modules it imports besides ObservabilityModule. */
  imports?: ModuleMetadata['imports'];
  providers: Provider[];
}

/**
 * A service's root module as {@link startHttpService} and {@link startWorkerService} take it (docs/architecture.md,
 * "Architecture: error shapes"): ObservabilityModule imported, the configuration provided under its token and, for an
 * API, the API's errors under API_ERRORS, then the service's own imports and providers.
 */
export function serviceModule(module: Type<unknown>, options: ServiceModuleOptions): DynamicModule {
  return {
    module,
    imports: [ObservabilityModule, ...(options.imports ?? [])],
    providers: [
      { provide: options.config.token, useValue: options.config.value },
      ...(options.errors ? [{ provide: API_ERRORS, useValue: options.errors }] : []),
      ...options.providers,
    ],
  };
}

/** What {@link lifecycleOf} starts and closes. */
export interface StartClose {
  start(): void;
  close(): Promise<void>;
}

/**
 * A provider class that starts what `token` names once the module is initialised and closes it at application
 * shutdown: a gateway's sessions, which follow registry changes from start (docs/architecture.md, "Architecture:
 * tenant registry") and close their engines' connections at shutdown.
 */
export function lifecycleOf(token: InjectionToken): Type<OnModuleInit & OnApplicationShutdown> {
  @Injectable()
  class Lifecycle implements OnModuleInit, OnApplicationShutdown {
    constructor(@Inject(token) private readonly target: StartClose) {}

    onModuleInit(): void {
      this.target.start();
    }

    async onApplicationShutdown(): Promise<void> {
      await this.target.close();
    }
  }
  return Lifecycle;
}
