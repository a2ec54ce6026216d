import { Redis } from 'ioredis';
import {
  type ResourceTokens,
  RegistryWriter,
  type SimilarityFunction,
  generateToken,
  tenantDocumentSchema,
} from '@restash/shared/data-access-registry';
import { type HttpService, startHttpService } from '@restash/shared/util-http';
import {
  type EmbedderLocal,
  type QdrantLocal,
  type RedisServer,
  startEmbedderLocal,
  startQdrantLocal,
  startRedisServer,
} from '@restash/shared/util-testing';
import { AppModule } from '../app.module';
import { loadVectorGatewayConfig } from '../config';

/** A vector index of a test tenant. */
export interface TestIndex {
  name: string;
  dimension: number;
  similarityFunction?: SimilarityFunction;
  /** Give the index the local embedding model (the stack then starts embedder-local). */
  embedding?: boolean;
  /** Give the index an embedding endpoint at this URL instead (embedder-local is not started for it). */
  embeddingUrl?: string | ((qdrantUrl: string) => string);
  maxRequestBytes?: number;
  dailyRequests?: number;
}

/** A running vector-gateway in this process, with its own control Redis, qdrant-local and, if needed, embedder-local. */
export interface VectorStack {
  url: string;
  managementUrl: string;
  control: RedisServer;
  qdrant: QdrantLocal;
  tokens(tenant: string, index: string): ResourceTokens;
  stop(): Promise<void>;
}

/** The model name the local embedder serves (deploy/embedder-local). */
export const LOCAL_MODEL = 'all-minilm-l6-v2';

/**
 * Starts the engines, writes the tenants into the registry, and starts vector-gateway on a free port.
 */
export async function startVectorStack(tenants: Record<string, TestIndex[]>, env: NodeJS.ProcessEnv = {}): Promise<VectorStack> {
  const needsEmbedder = Object.values(tenants).some((indexes) => indexes.some((i) => i.embedding));
  const [control, qdrant, embedder] = await Promise.all([
    startRedisServer(),
    startQdrantLocal(),
    needsEmbedder ? startEmbedderLocal() : Promise.resolve(undefined as EmbedderLocal | undefined),
  ]);
  const registry = new Redis(control.url);
  const tokens = new Map<string, ResourceTokens>();
  const writer = new RegistryWriter(registry);
  for (const [tenant, indexes] of Object.entries(tenants)) {
    const doc = tenantDocumentSchema.parse({
      apiVersion: 'restash.dev/v1alpha1',
      kind: 'Tenant',
      metadata: { name: tenant },
      spec: {
        vector: {
          indexes: indexes.map((i) => ({
            name: i.name,
            dimension: i.dimension,
            similarityFunction: i.similarityFunction ?? 'COSINE',
            qdrant: { url: qdrant.url },
            ...(i.embedding && embedder ? { embedding: { url: embedder.url, model: LOCAL_MODEL } } : {}),
            ...(i.embeddingUrl ? { embedding: { url: typeof i.embeddingUrl === 'string' ? i.embeddingUrl : i.embeddingUrl(qdrant.url), model: LOCAL_MODEL } } : {}),
            limits: { maxRequestBytes: i.maxRequestBytes ?? 1024 * 1024, dailyRequests: i.dailyRequests ?? 0 },
          })),
        },
      },
    });
    const vector = Object.fromEntries(indexes.map((i) => [i.name, { standard: generateToken(), readonly: generateToken() }]));
    await writer.applyTenant(doc, { kv: {}, vector, stream: {}, queue: {} });
    for (const [name, t] of Object.entries(vector)) tokens.set(`${tenant}/${name}`, t);
  }
  registry.disconnect();

  const config = loadVectorGatewayConfig({
    CONTROL_REDIS_URL: control.url,
    HOST: '127.0.0.1',
    PORT: '0',
    MANAGEMENT_PORT: '0',
    LOG_LEVEL: 'fatal',
    ...env,
  });
  const service: HttpService = await startHttpService(AppModule.forRoot(config), config.http);
  return {
    url: service.url,
    managementUrl: service.managementUrl,
    control,
    qdrant,
    tokens: (tenant, index) => {
      const found = tokens.get(`${tenant}/${index}`);
      if (!found) throw new Error(`no index ${tenant}/${index}`);
      return found;
    },
    stop: async () => {
      await service.close();
      await Promise.all([control.stop(), qdrant.stop(), embedder?.stop()]);
    },
  };
}
