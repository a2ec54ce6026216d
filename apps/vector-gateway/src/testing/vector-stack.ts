import { RegistrySeal, type SimilarityFunction } from '@restash/shared/data-access-registry';
import { type HttpService, startHttpService } from '@restash/shared/util-http';
import { LOCAL_MODEL, type QdrantLocal, type RedisServer, type ResourceTokens, startStack } from '@restash/platform/util-stack';
import { gatewayTestEnv, required, tenantDocuments, testLimits } from '@restash/shared/util-testing';
import { AppModule } from '../app.module';
import { loadVectorGatewayConfig } from '../config';

export { LOCAL_MODEL };

/** A vector index of a test tenant. */
export interface TestIndex {
  name: string;
  /** DENSE (default), SPARSE or HYBRID. */
  type?: 'DENSE' | 'SPARSE' | 'HYBRID';
  /** Required for DENSE and HYBRID, absent for SPARSE. */
  dimension?: number;
  /** Give the index BM25 for the sparse side of its `*-data` endpoints (SPARSE, HYBRID). */
  bm25?: boolean;
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
  /** The registry's seal (the stack's REGISTRY_SEAL_KEY), for a test that writes the registry itself. */
  seal: RegistrySeal;
  qdrant: QdrantLocal;
  tokens(tenant: string, index: string): ResourceTokens;
  stop(): Promise<void>;
}

/**
 * Starts the engines with util-stack (control Redis, qdrant-local, embedder-local when an index has the
 * local model), applies the tenants with the tenants command, and starts vector-gateway in this process
 * on a free port.
 */
export async function startVectorStack(tenants: Record<string, TestIndex[]>, env: NodeJS.ProcessEnv = {}): Promise<VectorStack> {
  const needsEmbedder = Object.values(tenants).some((indexes) => indexes.some((i) => i.embedding));
  const stack = await startStack({
    from: 'source',
    qdrant: true,
    embedder: needsEmbedder,
    tenants: ({ qdrant, embedder }) =>
      tenantDocuments(tenants, (indexes) => ({
        vector: {
          indexes: indexes.map((i) => ({
            name: i.name,
            ...(i.type ? { type: i.type } : {}),
            ...(i.dimension === undefined ? {} : { dimension: i.dimension }),
            similarityFunction: i.similarityFunction ?? 'COSINE',
            ...(i.bm25 ? { sparseEmbedding: { model: 'BM25' } } : {}),
            qdrant: { url: qdrant?.url },
            ...(i.embedding && embedder ? { embedding: { url: embedder.url, model: LOCAL_MODEL } } : {}),
            ...(i.embeddingUrl && qdrant
              ? { embedding: { url: typeof i.embeddingUrl === 'string' ? i.embeddingUrl : i.embeddingUrl(qdrant.url), model: LOCAL_MODEL } }
              : {}),
            limits: testLimits(i),
          })),
        },
      })),
  });
  const { control, qdrant } = stack as typeof stack & { qdrant: QdrantLocal };

  const config = loadVectorGatewayConfig({
    ...gatewayTestEnv(stack),
    EMBEDDING_ALLOWLIST: '127.0.0.0/8,::1', // the local embedder and the tests' stub providers
    ...env,
  });
  const service: HttpService = await startHttpService(AppModule.forRoot(config), config.http);
  return {
    url: service.url,
    managementUrl: service.managementUrl,
    control,
    seal: new RegistrySeal(stack.registrySealKey),
    qdrant,
    tokens: (tenant, index) => required(stack.tokens(tenant).vector[index], `index ${tenant}/${index}`),
    stop: async () => {
      await service.close();
      await stack.stop();
    },
  };
}

/** An answer of the Vector API as {@link postApi} reads it. */
export interface ApiAnswer {
  status: number;
  body: { result?: unknown; error?: string };
}

/** POSTs `body` as JSON to `<stack.url>/<path>` with `token`: the HTTP API directly, for what an SDK does not send (bad input, rename-namespace). */
export async function postApi(stack: VectorStack, token: string, path: string, body: unknown): Promise<ApiAnswer> {
  const response = await fetch(`${stack.url}/${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as ApiAnswer['body'] };
}
