import { type DynamicModule, Module } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { Redis } from 'ioredis';
import { RegistryReader } from '@restash/shared/data-access-registry';
import { CONTROL_REDIS, TenancyModule, TenantGate } from '@restash/shared/feature-tenancy';
import { lifecycleOf, serviceModule } from '@restash/shared/util-http';
import { KafkaCluster } from '@restash/stream/data-access-kafka';
import { InstanceDirectory, PeerClient, StreamSessions, peerHost, peerSecret } from '@restash/stream/feature-cluster';
import { STREAM_CONFIG, type StreamGatewayConfig } from './config';
import { StreamMetrics } from './stream-metrics';
import type { Sessions } from './stream.operations';
import { STREAM_ERRORS, StreamRoutes } from './stream.routes';

/**
 * This replica's address in the instance directory, as peers reach it: PEER_HOST or derived (peerHost), and the
 * bound API port (known once the server listens).
 */
function peerUrl(adapterHost: HttpAdapterHost, config: StreamGatewayConfig): string {
  const address = adapterHost.httpAdapter.getHttpServer().address() as { port: number } | string | null;
  const port = address && typeof address === 'object' ? address.port : config.http.port;
  const host = peerHost(config.peerHost, config.http.host);
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}

/**
 * The Stream API's logic (libs/stream/feature-cluster) over its ports: the tenant gate, the registry, Kafka clients
 * per broker list, the instance directory in the control Redis (opened on first use, once the API port is bound),
 * the peers (PeerClient, with the peer secret derived from REGISTRY_SEAL_KEY), the metrics.
 */
function streamSessions(gate: TenantGate, registry: RegistryReader, control: Redis, adapterHost: HttpAdapterHost, config: StreamGatewayConfig, metrics: StreamMetrics): Sessions {
  return new StreamSessions({
    openGrant: (credentials) => gate.open('stream', credentials),
    registry,
    kafka: (brokers) => new KafkaCluster({ brokers, clientId: 'restash-stream-gateway', requestTimeoutMs: config.kafkaRequestTimeoutMs }),
    openDirectory: (boot, leaseMs) => new InstanceDirectory(control, { boot, peer: peerUrl(adapterHost, config) }, leaseMs),
    peers: new PeerClient(peerSecret(config.registrySealKey)),
    control,
    observer: metrics,
    limits: { kafkaRequestTimeoutMs: config.kafkaRequestTimeoutMs, consumer: config.consumer },
  });
}

/** stream-gateway: the Stream REST API (docs/stream.md, "What the Stream API does") over Kafka, its logic in libs/stream/feature-cluster. */
@Module({})
export class AppModule {
  static forRoot(config: StreamGatewayConfig): DynamicModule {
    return serviceModule(AppModule, {
      config: { token: STREAM_CONFIG, value: config },
      errors: STREAM_ERRORS,
      imports: [TenancyModule.forRoot(config)],
      providers: [
        StreamMetrics,
        {
          provide: StreamSessions,
          inject: [TenantGate, RegistryReader, CONTROL_REDIS, HttpAdapterHost, STREAM_CONFIG, StreamMetrics],
          useFactory: streamSessions,
        },
        // Follows registry changes from start; closes the consumer instances, then the Kafka clients, at shutdown.
        lifecycleOf(StreamSessions),
        StreamRoutes,
      ],
    });
  }
}
