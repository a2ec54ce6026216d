/**
 * Every port of a local stack, with the port `make dev` uses and the environment variable that moves
 * it. Stacks started for tests and benchmarks take free ports instead, unless told otherwise.
 */
export const DEV_PORTS = {
  controlRedis: { variable: 'RESTASH_CONTROL_REDIS_PORT', port: 6390 },
  /** The Redis server of the demo tenant's KV database `main` (deploy/local/tenants.yaml). */
  dataRedis: { variable: 'RESTASH_DATA_REDIS_PORT', port: 6391 },
  kv: { variable: 'RESTASH_KV_PORT', port: 8080 },
  kvManagement: { variable: 'RESTASH_KV_MANAGEMENT_PORT', port: 9080 },
  vector: { variable: 'RESTASH_VECTOR_PORT', port: 8081 },
  vectorManagement: { variable: 'RESTASH_VECTOR_MANAGEMENT_PORT', port: 9081 },
  qdrant: { variable: 'RESTASH_QDRANT_PORT', port: 6333 },
  embedder: { variable: 'RESTASH_EMBEDDER_PORT', port: 7997 },
  stream: { variable: 'RESTASH_STREAM_PORT', port: 8082 },
  streamManagement: { variable: 'RESTASH_STREAM_MANAGEMENT_PORT', port: 9082 },
  kafka: { variable: 'RESTASH_KAFKA_PORT', port: 9092 },
  kafkaController: { variable: 'RESTASH_KAFKA_CONTROLLER_PORT', port: 9093 },
  queue: { variable: 'RESTASH_QUEUE_PORT', port: 8083 },
  queueManagement: { variable: 'RESTASH_QUEUE_MANAGEMENT_PORT', port: 9083 },
  queueWorkerManagement: { variable: 'RESTASH_QUEUE_WORKER_MANAGEMENT_PORT', port: 9084 },
} as const;

/** A port of a local stack (a key of {@link DEV_PORTS}). */
export type PortName = keyof typeof DEV_PORTS;

/** The ports of a local stack, by name. */
export type StackPorts = Record<PortName, number>;

/** The variable a tenants file reads the data Redis's password from (deploy/local/tenants.yaml). */
export const DATA_REDIS_PASSWORD_VARIABLE = 'RESTASH_DATA_REDIS_PASSWORD';

/**
 * The ports of `make dev`: {@link DEV_PORTS}, each moved by its variable in `env` when set.
 *
 * @throws Error naming the variable when one is not a port number (1 to 65535)
 */
export function devPorts(env: NodeJS.ProcessEnv = process.env): StackPorts {
  const ports = {} as StackPorts;
  for (const [name, { variable, port }] of Object.entries(DEV_PORTS) as Array<[PortName, { variable: string; port: number }]>) {
    const given = env[variable];
    if (given === undefined || given === '') {
      ports[name] = port;
      continue;
    }
    const value = Number(given);
    if (!/^\d+$/.test(given) || value < 1 || value > 65_535) throw new Error(`${variable}=${given} is not a port number (1 to 65535)`);
    ports[name] = value;
  }
  return ports;
}
