import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { z } from 'zod';
import { env, loadConfig } from '@restash/shared/util-config';
import type { KvDatabaseRecord, QueueProjectRecord, RetiredResource, StreamClusterRecord, VectorIndexRecord } from './records';

/**
 * Secrets a platform team gives a resource (an external Redis URL with its password, a Qdrant API key, an
 * embedding provider's key) as the registry stores them: sealed with AES-256-GCM under the platform key
 * REGISTRY_SEAL_KEY, which the appliers (tenants command, operator) and every gateway and worker are given.
 * The registry alone never reveals them; only {@link RegistryWriter} and {@link RegistryReader} see the
 * sealed form, everything else holds plain values in memory.
 *
 * A sealed value: `sealed:v1:` and the standard base64 of iv (12 bytes) | tag (16 bytes) | ciphertext.
 */
export const SEALED_PREFIX = 'sealed:v1:';

/** The platform variable that holds the registry's seal key: 32 random bytes, base64 (`openssl rand -base64 32`). */
export const REGISTRY_SEAL_KEY = 'REGISTRY_SEAL_KEY';

const IV_BYTES = 12;
const TAG_BYTES = 16;

/** Thrown by {@link RegistrySeal.open} when a value is not sealed, was altered, or was sealed under another key. */
export class SealError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SealError';
  }
}

/** AES-256-GCM of `plain` (UTF-8) under `key` (32 bytes) with a random 96-bit iv. @returns iv | tag | ciphertext */
export function aesGcmSeal(key: Buffer, plain: string): Buffer {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]);
}

/**
 * Opens what {@link aesGcmSeal} made.
 * @throws Error when `key` is not the one it was sealed with, or the bytes were altered or cut
 */
export function aesGcmOpen(key: Buffer, raw: Buffer): string {
  if (raw.length < IV_BYTES + TAG_BYTES) throw new Error('sealed value too short');
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
  decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
}

/** The resource records by API, as RetiredResource and the token records name the APIs. */
interface ResourceRecords {
  kv: KvDatabaseRecord;
  vector: VectorIndexRecord;
  stream: StreamClusterRecord;
  queue: QueueProjectRecord;
}

/** The record with each field that holds a user-provided secret passed through `change` (KV: redisUrl; vector: qdrantApiKey, embedder.apiKey). */
function mapSecrets<A extends keyof ResourceRecords>(api: A, record: ResourceRecords[A], change: (value: string) => string): ResourceRecords[A] {
  if (api === 'kv') {
    const kv = record as KvDatabaseRecord;
    return { ...kv, redisUrl: change(kv.redisUrl) } as ResourceRecords[A];
  }
  if (api === 'vector') {
    const vector = record as VectorIndexRecord;
    const { qdrantApiKey, embedder } = vector;
    return {
      ...vector,
      ...(qdrantApiKey === undefined ? {} : { qdrantApiKey: change(qdrantApiKey) }),
      ...(embedder?.apiKey === undefined ? {} : { embedder: { ...embedder, apiKey: change(embedder.apiKey) } }),
    } as ResourceRecords[A];
  }
  return record;
}

/** The platform key of the registry's sealed values (see {@link SEALED_PREFIX}). */
export class RegistrySeal {
  private readonly key: Buffer;

  /**
   * @param key 32 bytes, standard base64 (REGISTRY_SEAL_KEY)
   * @throws SealError when it is not 32 bytes of standard base64
   */
  constructor(key: string) {
    if (!/^[A-Za-z0-9+/]{43}=$/.test(key)) throw new SealError(`${REGISTRY_SEAL_KEY} must be 32 random bytes in base64 (openssl rand -base64 32)`);
    this.key = Buffer.from(key, 'base64');
  }

  /** A new key for {@link RegistrySeal}: 32 random bytes, standard base64. */
  static generateKey(): string {
    return randomBytes(32).toString('base64');
  }

  /** `plain` sealed: `sealed:v1:<base64 iv|tag|ciphertext>`, different on every call. */
  seal(plain: string): string {
    return `${SEALED_PREFIX}${aesGcmSeal(this.key, plain).toString('base64')}`;
  }

  /**
   * The plain value of a sealed one.
   * @throws SealError when `sealed` is not in the sealed form, was altered, or was sealed under another key
   */
  open(sealed: string): string {
    if (!sealed.startsWith(SEALED_PREFIX)) throw new SealError(`not a sealed value (no ${SEALED_PREFIX} prefix)`);
    try {
      return aesGcmOpen(this.key, Buffer.from(sealed.slice(SEALED_PREFIX.length), 'base64'));
    } catch {
      throw new SealError(`a sealed value does not open with this ${REGISTRY_SEAL_KEY}: sealed under another key, or altered`);
    }
  }

  /** A resource record as the registry stores it: its user-provided secrets sealed (stream clusters and queue projects hold none). */
  sealRecord<A extends keyof ResourceRecords>(api: A, record: ResourceRecords[A]): ResourceRecords[A] {
    return mapSecrets(api, record, (value) => this.seal(value));
  }

  /**
   * A stored resource record with its secrets opened.
   * @throws SealError when one does not open (see {@link open})
   */
  openRecord<A extends keyof ResourceRecords>(api: A, record: ResourceRecords[A]): ResourceRecords[A] {
    return mapSecrets(api, record, (value) => this.open(value));
  }

  /** A retired resource (a teardown record's entry) as the registry stores it, its record sealed ({@link sealRecord}). */
  sealResource(resource: RetiredResource): RetiredResource {
    return { api: resource.api, record: this.sealRecord(resource.api, resource.record) } as RetiredResource;
  }

  /**
   * A stored retired resource with its record opened ({@link openRecord}).
   * @throws SealError when a secret of its record does not open
   */
  openResource(resource: RetiredResource): RetiredResource {
    return { api: resource.api, record: this.openRecord(resource.api, resource.record) } as RetiredResource;
  }
}

const registrySealEnv = z.object({ [REGISTRY_SEAL_KEY]: env.key256() });

/**
 * The registry's seal from the platform variable REGISTRY_SEAL_KEY (for the appliers: the tenants command and
 * the operator; gateways get it through their configuration).
 * @param source the variables to read (e.g. `process.env`)
 * @throws ConfigError naming REGISTRY_SEAL_KEY when it is missing or not 32 bytes of base64
 */
export function registrySealFromEnv(source: NodeJS.ProcessEnv): RegistrySeal {
  return new RegistrySeal(loadConfig(registrySealEnv, source)[REGISTRY_SEAL_KEY]);
}
