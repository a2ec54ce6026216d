import { z } from 'zod';
import { parseSentinelUrl } from './redis-url';

/**
 * Thrown by {@link loadConfig} when the environment does not satisfy the schema. `problems` lists
 * every invalid or missing variable at once (`NAME: reason`), so an operator fixes them in one go.
 */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }

  /** The variables its problems name, in order (each problem's text before its first `:`). */
  get variables(): string[] {
    return this.problems.map((problem) => problem.split(':')[0] ?? problem);
  }
}

/**
 * Validates environment variables against a zod schema (an object keyed by variable name, possibly
 * transformed into a nested config object),
 * and returns the parsed (typed, defaulted, transformed) value.
 *
 * @param schema zod object keyed by environment variable name
 * @param env the variables to read; defaults to `process.env`
 * @throws ConfigError listing every problem when validation fails
 */
export function loadConfig<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv = process.env): z.output<S> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  throw new ConfigError(
    result.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`),
  );
}

/** Common variable shapes, so every app spells them the same way. */
export const env = {
  /** A TCP port, 0–65535 (0 = pick a free one). */
  port: (fallback: number) => z.coerce.number().int().min(0).max(65_535).default(fallback),
  /** A positive integer, e.g. a byte size or a count. */
  positiveInt: (fallback: number) => z.coerce.number().int().positive().default(fallback),
  /** `true`/`false`/`1`/`0`. */
  flag: (fallback: boolean) =>
    z
      .enum(['true', 'false', '1', '0'])
      .default(fallback ? 'true' : 'false')
      .transform((v) => v === 'true' || v === '1'),
  /** A Redis URL (`redis://`, `rediss://`) or a Redis Sentinel deployment's (`redis+sentinel://`, parseSentinelUrl). */
  redisUrl: () =>
    z
      .string()
      .regex(/^rediss?(\+sentinel)?:\/\//, 'must be a redis://, rediss:// or redis+sentinel:// URL')
      .superRefine((url, ctx) => {
        try {
          parseSentinelUrl(url);
        } catch (error) {
          ctx.addIssue({ code: 'custom', message: (error as Error).message });
        }
      }),
  logLevel: () => z.enum(['fatal', 'error', 'warn', 'log', 'debug', 'verbose']).default('log'),
  /**
   * A 256-bit key as standard base64 (44 characters, e.g. the output of `openssl rand -base64 32`), such as
   * REGISTRY_SEAL_KEY. Only the form is checked; the value is returned as given.
   */
  key256: () => z.string({ error: 'required: 32 random bytes in base64 (openssl rand -base64 32)' }).regex(/^[A-Za-z0-9+/]{43}=$/, 'must be 32 random bytes in base64 (44 characters, e.g. openssl rand -base64 32)'),
};

/**
 * The variables of the tenant registry that every service reads first (docs/configuration.md): CONTROL_REDIS_URL
 * (the control Redis) and REGISTRY_SEAL_KEY (the key that opens the registry's sealed secrets).
 */
export function registryEnv() {
  return {
    CONTROL_REDIS_URL: env.redisUrl(),
    REGISTRY_SEAL_KEY: env.key256(),
  };
}

/**
 * What a service's TenancyModule takes (the control Redis, the cache TTL of registry records, the seal key), from the
 * {@link registryEnv} variables and REGISTRY_CACHE_TTL_MS (docs/configuration.md).
 */
export function registryConfig(e: { CONTROL_REDIS_URL: string; REGISTRY_SEAL_KEY: string; REGISTRY_CACHE_TTL_MS: number }) {
  return {
    controlRedisUrl: e.CONTROL_REDIS_URL,
    registryCacheTtlMs: e.REGISTRY_CACHE_TTL_MS,
    registrySealKey: e.REGISTRY_SEAL_KEY,
  };
}

/**
 * The variables of a service without an API port (queue-worker, the operator; docs/configuration.md), to spread into
 * its schema: HOST (0.0.0.0), MANAGEMENT_PORT and LOG_LEVEL (log).
 */
export function workerServiceEnv(managementPort: number) {
  return {
    HOST: z.string().default('0.0.0.0'),
    MANAGEMENT_PORT: env.port(managementPort),
    LOG_LEVEL: env.logLevel(),
  };
}

/** The variables {@link workerServiceEnv} and {@link httpServiceEnv} share, as the service's config reads them. */
interface ServiceVariables {
  HOST: string;
  MANAGEMENT_PORT: number;
  LOG_LEVEL: z.output<ReturnType<typeof env.logLevel>>;
}

/**
 * The `service` section of a worker's config (what `startWorkerService` takes), from the {@link workerServiceEnv}
 * variables (docs/configuration.md).
 */
export function workerServiceConfig(service: string, e: ServiceVariables) {
  return { service, host: e.HOST, managementPort: e.MANAGEMENT_PORT, logLevel: e.LOG_LEVEL };
}

/**
 * The variables every HTTP service reads, to spread into its schema (docs/configuration.md): HOST (0.0.0.0), PORT,
 * MANAGEMENT_PORT, BODY_LIMIT_BYTES (100 MiB, the hard cap on any body), UNREAD_ANSWER_BYTES (64 MiB per
 * tenant, see registerTenantApi) and LOG_LEVEL (log).
 */
export function httpServiceEnv(port: number, managementPort: number) {
  const { HOST, MANAGEMENT_PORT, LOG_LEVEL } = workerServiceEnv(managementPort);
  return {
    HOST,
    PORT: env.port(port),
    MANAGEMENT_PORT,
    BODY_LIMIT_BYTES: env.positiveInt(100 * 1024 * 1024),
    UNREAD_ANSWER_BYTES: env.positiveInt(64 * 1024 * 1024),
    LOG_LEVEL,
  };
}

/**
 * The `http` section of a service's config (what `startHttpService` takes), from the {@link httpServiceEnv} variables
 * (docs/configuration.md).
 */
export function httpServiceConfig(service: string, e: ServiceVariables & { PORT: number; BODY_LIMIT_BYTES: number; UNREAD_ANSWER_BYTES: number }) {
  const { host, managementPort, logLevel } = workerServiceConfig(service, e);
  return {
    service,
    host,
    port: e.PORT,
    managementPort,
    bodyLimitBytes: e.BODY_LIMIT_BYTES,
    unreadAnswerBytes: e.UNREAD_ANSWER_BYTES,
    logLevel,
  };
}

/**
 * The `load<App>Config` function of an app (docs/configuration.md): {@link loadConfig} of its schema, on
 * `process.env` unless given another source.
 * @returns a loader that throws ConfigError listing every invalid variable
 */
export function configLoader<S extends z.ZodType>(schema: S): (source?: NodeJS.ProcessEnv) => z.output<S> {
  return (source = process.env) => loadConfig(schema, source);
}
