// A resource's Secret (split from kinds.ts, which exports it): its tokens, the gateways' URLs, and the string data
// under the names the official SDKs read.
import type { RestashResource } from './resources';

/** The tokens of one resource's Secret; a queue project's also has its signing keys. */
export interface SecretTokens {
  standard: string;
  readonly: string;
  currentSigningKey?: string;
  nextSigningKey?: string;
}

/** The gateways' public URLs (the applier's KV_GATEWAY_URL, VECTOR_GATEWAY_URL, STREAM_GATEWAY_URL, QUEUE_GATEWAY_URL). */
export interface GatewayUrls {
  kv?: string;
  vector?: string;
  stream?: string;
  queue?: string;
}

/**
 * The Basic-auth user name of a stream cluster's credential: `<namespace>.<name>` for the standard one,
 * `<namespace>.<name>.readonly` for the read-only one (the registry's streamUsername(streamClusterId(...))).
 */
export function streamClusterUsername(namespace: string, name: string, role: 'standard' | 'readonly'): string {
  return role === 'readonly' ? `${namespace}.${name}.readonly` : `${namespace}.${name}`;
}

/**
 * The string data of a resource's Secret, under the names the official SDKs read (docs/kubernetes.md, "Kubernetes
 * resources"): the gateway's URL and the resource's tokens.
 * @throws Error when `urls` lacks the kind's gateway URL, or a queue project's tokens lack signing keys
 */
export function secretDataOf(resource: RestashResource, tokens: SecretTokens, urls: GatewayUrls): Record<string, string> {
  const url = (value: string | undefined, variable: string) => {
    if (!value) throw new Error(`${resource.kind} ${resource.metadata.namespace}/${resource.metadata.name}: ${variable} is not set`);
    return value;
  };
  switch (resource.kind) {
    case 'KvDatabase':
      return {
        UPSTASH_REDIS_REST_URL: url(urls.kv, 'KV_GATEWAY_URL'),
        UPSTASH_REDIS_REST_TOKEN: tokens.standard,
        UPSTASH_REDIS_REST_READONLY_TOKEN: tokens.readonly,
      };
    case 'VectorIndex':
      return {
        UPSTASH_VECTOR_REST_URL: url(urls.vector, 'VECTOR_GATEWAY_URL'),
        UPSTASH_VECTOR_REST_TOKEN: tokens.standard,
        UPSTASH_VECTOR_REST_READONLY_TOKEN: tokens.readonly,
      };
    case 'StreamCluster': {
      const { namespace, name } = resource.metadata;
      return {
        UPSTASH_KAFKA_REST_URL: url(urls.stream, 'STREAM_GATEWAY_URL'),
        UPSTASH_KAFKA_REST_USERNAME: streamClusterUsername(namespace, name, 'standard'),
        UPSTASH_KAFKA_REST_PASSWORD: tokens.standard,
        UPSTASH_KAFKA_REST_READONLY_USERNAME: streamClusterUsername(namespace, name, 'readonly'),
        UPSTASH_KAFKA_REST_READONLY_PASSWORD: tokens.readonly,
      };
    }
    case 'QueueProject': {
      const { currentSigningKey, nextSigningKey } = tokens;
      if (!currentSigningKey || !nextSigningKey) {
        throw new Error(`QueueProject ${resource.metadata.namespace}/${resource.metadata.name}: signing keys are missing`);
      }
      return {
        QSTASH_URL: url(urls.queue, 'QUEUE_GATEWAY_URL'),
        QSTASH_TOKEN: tokens.standard,
        QSTASH_READONLY_TOKEN: tokens.readonly,
        QSTASH_CURRENT_SIGNING_KEY: currentSigningKey,
        QSTASH_NEXT_SIGNING_KEY: nextSigningKey,
      };
    }
  }
}
