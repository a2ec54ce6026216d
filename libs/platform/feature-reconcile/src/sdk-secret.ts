import type { V1Secret } from '@kubernetes/client-node';
import { type KvAclState, generateQueueToken, generateSigningKey, generateToken, tokenRecordSchema } from '@restash/shared/data-access-registry';
import { z } from 'zod';
import { type GatewayUrls, type RestashResource, type SecretTokens, secretDataOf } from '@restash/shared/util-resources';

/** Set on a resource to rotate its tokens: a value the Secret has not been rotated for yet gives new tokens. */
export const ROTATE_ANNOTATION = 'restash.dev/rotate-tokens';
/** Kept on the Secret: the value of {@link ROTATE_ANNOTATION} its tokens were made for. */
export const ROTATED_FOR_ANNOTATION = 'restash.dev/rotated-for';

/** Where each kind's Secret keeps the tokens (the keys the official SDKs read). */
const TOKEN_KEYS: Record<RestashResource['kind'], { standard: string; readonly: string; current?: string; next?: string }> = {
  KvDatabase: { standard: 'UPSTASH_REDIS_REST_TOKEN', readonly: 'UPSTASH_REDIS_REST_READONLY_TOKEN' },
  VectorIndex: { standard: 'UPSTASH_VECTOR_REST_TOKEN', readonly: 'UPSTASH_VECTOR_REST_READONLY_TOKEN' },
  StreamCluster: { standard: 'UPSTASH_KAFKA_REST_PASSWORD', readonly: 'UPSTASH_KAFKA_REST_READONLY_PASSWORD' },
  QueueProject: { standard: 'QSTASH_TOKEN', readonly: 'QSTASH_READONLY_TOKEN', current: 'QSTASH_CURRENT_SIGNING_KEY', next: 'QSTASH_NEXT_SIGNING_KEY' },
};

/** A Secret's data as text (`data` is base64; `stringData` is never returned by the API server but is read for objects built here). */
export function secretText(secret: V1Secret | undefined): Record<string, string> {
  const text: Record<string, string> = {};
  for (const [key, value] of Object.entries(secret?.data ?? {})) text[key] = Buffer.from(value, 'base64').toString('utf8');
  return { ...text, ...secret?.stringData };
}

/** A queue project's request-signing keys, as the registry record holds them (QueueProjectRecord.signingKeys). */
export interface SigningKeys {
  current: string;
  next: string;
}

/**
 * The tokens of a resource's Secret (issue 13: "tokens are kept while the Secret exists"): those it holds,
 * or new ones when it holds none, lacks one, or the resource asks for a rotation its Secret has not had
 * ({@link ROTATE_ANNOTATION} differs from the Secret's {@link ROTATED_FOR_ANNOTATION}). A rotation keeps a
 * queue project's signing keys (QStash rotates those through its API).
 *
 * A queue project's signing keys (docs/queue.md, "Queue: signing-key rotation"): once the project is in the registry,
 * its record's (`registered`, changed there by `POST /v2/keys/rotate`); before that, the Secret's, or new ones.
 * The Secret's keys only seed a new project.
 *
 * @param registered the queue project's signing keys in the registry, when it is there (ignored for other kinds)
 * @param projectId the queue project's registry id: its new tokens name it (generateQueueToken)
 * @returns the tokens and whether the standard and read-only tokens are new
 */
export function tokensFor(resource: RestashResource, secret: V1Secret | undefined, registered?: SigningKeys, projectId?: string): { tokens: SecretTokens; fresh: boolean } {
  const keys = TOKEN_KEYS[resource.kind];
  const data = secretText(secret);
  const rotateFor = resource.metadata.annotations?.[ROTATE_ANNOTATION];
  const rotate = rotateFor !== undefined && rotateFor !== secret?.metadata?.annotations?.[ROTATED_FOR_ANNOTATION];
  const signing =
    keys.current && keys.next
      ? {
          currentSigningKey: registered?.current || data[keys.current] || generateSigningKey(),
          nextSigningKey: registered?.next || data[keys.next] || generateSigningKey(),
        }
      : {};
  const standard = data[keys.standard];
  const readonly = data[keys.readonly];
  const hasSigningKeys = !keys.current || registered !== undefined || (data[keys.current] && data[keys.next ?? '']);
  if (!rotate && standard && readonly && hasSigningKeys) return { tokens: { standard, readonly, ...signing }, fresh: false };
  const token = resource.kind === 'QueueProject' && projectId !== undefined ? () => generateQueueToken(projectId) : generateToken;
  return { tokens: { standard: token(), readonly: token(), ...signing }, fresh: true };
}

/**
 * The signing keys each queue project's Secret was last written with, by the project's registry key
 * (registryKeys.queueProject), so that a change announced by the registry (a rotation) can tell whether a Secret
 * is now behind: the operator reconciles that project's namespace again at once instead of at the next resync.
 */
export class SecretSigningKeys {
  private readonly written = new Map<string, { namespace: string; keys: string }>();

  /** Notes that the Secret of the project at registry key `key`, in `namespace`, holds these keys. */
  wrote(key: string, namespace: string, keys: SigningKeys): void {
    this.written.set(key, { namespace, keys: `${keys.current} ${keys.next}` });
  }

  /** Forgets the projects of `namespace` whose registry keys are not in `kept` (projects gone, or whose Secret is not written). */
  keepOnly(namespace: string, kept: Set<string>): void {
    for (const [key, entry] of this.written) if (entry.namespace === namespace && !kept.has(key)) this.written.delete(key);
  }

  /**
   * The namespace to reconcile when the project at registry key `key` now holds `keys` in the registry: the
   * namespace of a Secret written with other keys; undefined when it holds them, or no Secret of it is known.
   */
  behind(key: string, keys: SigningKeys | undefined): string | undefined {
    const entry = this.written.get(key);
    if (!entry || !keys || entry.keys === `${keys.current} ${keys.next}`) return undefined;
    return entry.namespace;
  }
}

/** Labels of every Secret the operator writes for a resource. */
export function sdkSecretLabels(resource: RestashResource): Record<string, string> {
  return {
    'app.kubernetes.io/managed-by': 'restash-operator',
    'app.kubernetes.io/part-of': 'restash',
    'restash.dev/kind': resource.kind,
  };
}

/**
 * The Secret of a resource (issue 13, "Each resource gets a Secret of its own"): named after it, owned by it
 * (controller ownerReference, so it goes with the resource), holding the SDK variables (secretDataOf) so that
 * `envFrom: [{ secretRef: { name } }]` configures an application.
 *
 * @throws Error when the resource has no uid (it was not read from the API server) or a gateway URL is missing
 */
export function sdkSecretOf(resource: RestashResource, tokens: SecretTokens, urls: GatewayUrls): V1Secret {
  const { name, namespace, uid } = resource.metadata;
  if (!uid) throw new Error(`${resource.kind} ${namespace}/${name} has no uid`);
  const rotatedFor = resource.metadata.annotations?.[ROTATE_ANNOTATION];
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name,
      namespace,
      labels: sdkSecretLabels(resource),
      ...(rotatedFor !== undefined ? { annotations: { [ROTATED_FOR_ANNOTATION]: rotatedFor } } : {}),
      ownerReferences: [{ apiVersion: resource.apiVersion, kind: resource.kind, name, uid, controller: true, blockOwnerDeletion: true }],
    },
    type: 'Opaque',
    stringData: secretDataOf(resource, tokens, urls),
  };
}

/** The key of {@link aclStateSecretOf}'s Secret that holds the state, as JSON. */
const ACL_STATE_KEY = 'acl-state.json';

const aclStateSchema = z.object({ tokens: z.array(tokenRecordSchema), users: z.record(z.string(), z.string()) });

/** The name of a KvDatabase's ACL state Secret: `<name>.acl` (a resource's name is a DNS label, so no resource's own Secret has it). */
export function aclStateSecretName(resource: RestashResource): string {
  return `${resource.metadata.name}.acl`;
}

/**
 * The Secret that keeps a KvDatabase's run-time ACL state (RuntimeStore.kvAclState: its ACL RESTTOKEN token records,
 * digests and sealed passwords only, and its tenant ACL users' sealed rules), owned by the KvDatabase, so that a
 * registry that lost it gets it back (docs/architecture.md, "Architecture: tenant registry").
 */
export function aclStateSecretOf(resource: RestashResource, state: KvAclState): V1Secret {
  const { namespace, uid } = resource.metadata;
  if (!uid) throw new Error(`${resource.kind} ${namespace}/${resource.metadata.name} has no uid`);
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: aclStateSecretName(resource),
      namespace,
      labels: { ...sdkSecretLabels(resource), 'restash.dev/content': 'acl-state' },
      ownerReferences: [{ apiVersion: resource.apiVersion, kind: resource.kind, name: resource.metadata.name, uid, controller: true, blockOwnerDeletion: true }],
    },
    type: 'Opaque',
    stringData: { [ACL_STATE_KEY]: JSON.stringify(state) },
  };
}

/** The ACL state an {@link aclStateSecretOf} Secret keeps; undefined when it holds none that reads. */
export function aclStateOf(secret: V1Secret | undefined): KvAclState | undefined {
  const raw = secretText(secret)[ACL_STATE_KEY];
  if (raw === undefined) return undefined;
  try {
    const parsed = aclStateSchema.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** Whether a Secret is controlled by this resource (a Secret of the same name that is not is left alone). */
export function ownedBy(secret: V1Secret, resource: RestashResource): boolean {
  return (secret.metadata?.ownerReferences ?? []).some((ref) => ref.controller === true && ref.uid === resource.metadata.uid);
}

/** Whether the Secret already holds exactly this data and rotation mark (so no write is needed). */
export function secretUpToDate(current: V1Secret | undefined, wanted: V1Secret): boolean {
  if (!current) return false;
  const have = secretText(current);
  const want = wanted.stringData ?? {};
  const sameData = Object.keys(have).length === Object.keys(want).length && Object.entries(want).every(([k, v]) => have[k] === v);
  const mark = (s: V1Secret) => s.metadata?.annotations?.[ROTATED_FOR_ANNOTATION];
  return sameData && mark(current) === mark(wanted);
}
