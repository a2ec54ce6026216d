import type { V1Secret } from '@kubernetes/client-node';
import type { QueueProject, StreamCluster } from '@restash/shared/util-resources';
import {
  ROTATED_FOR_ANNOTATION,
  ROTATE_ANNOTATION,
  SecretSigningKeys,
  aclStateOf,
  aclStateSecretOf,
  ownedBy,
  sdkSecretOf,
  secretText,
  secretUpToDate,
  tokensFor,
} from './sdk-secret';

const urls = { kv: 'http://kv', vector: 'http://vector', stream: 'http://stream', queue: 'http://queue' };

function queueProject(annotations?: Record<string, string>): QueueProject {
  return {
    apiVersion: 'restash.dev/v1alpha1',
    kind: 'QueueProject',
    metadata: { name: 'jobs', namespace: 'acme', uid: 'uid-1', ...(annotations ? { annotations } : {}) },
    spec: { retries: { default: 3, max: 10 }, destinations: { inNamespace: false }, limits: { maxRequestBytes: 1024, dailyRequests: 0 } },
  };
}

/** The Secret as the API server returns it: data in base64. */
function stored(secret: V1Secret): V1Secret {
  const data = Object.fromEntries(Object.entries(secret.stringData ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));
  return { ...secret, stringData: undefined, data } as V1Secret;
}

describe('tokensFor and sdkSecretOf', () => {
  it('makes new tokens and signing keys for a resource without a Secret, and keeps them while the Secret exists', () => {
    const project = queueProject();
    const first = tokensFor(project, undefined);
    expect(first.fresh).toBe(true);
    expect(first.tokens.currentSigningKey).toBeTruthy();
    const secret = stored(sdkSecretOf(project, first.tokens, urls));
    expect(secret.metadata?.name).toBe('jobs');
    expect(secret.metadata?.ownerReferences).toEqual([{ apiVersion: 'restash.dev/v1alpha1', kind: 'QueueProject', name: 'jobs', uid: 'uid-1', controller: true, blockOwnerDeletion: true }]);
    expect(Buffer.from(secret.data?.['QSTASH_URL'] ?? '', 'base64').toString()).toBe('http://queue');

    const again = tokensFor(project, secret);
    expect(again).toEqual({ tokens: first.tokens, fresh: false });
    expect(secretUpToDate(secret, sdkSecretOf(project, again.tokens, urls))).toBe(true);
    expect(ownedBy(secret, project)).toBe(true);
    expect(ownedBy(secret, { ...project, metadata: { ...project.metadata, uid: 'other' } })).toBe(false);
  });

  it('rotates the tokens once per annotation value, keeping the signing keys', () => {
    const first = tokensFor(queueProject(), undefined).tokens;
    const rotating = queueProject({ [ROTATE_ANNOTATION]: '2026-11-22' });
    const secret = stored(sdkSecretOf(queueProject(), first, urls));
    const rotated = tokensFor(rotating, secret);
    expect(rotated.fresh).toBe(true);
    expect(rotated.tokens.standard).not.toBe(first.standard);
    expect(rotated.tokens.readonly).not.toBe(first.readonly);
    expect(rotated.tokens.currentSigningKey).toBe(first.currentSigningKey);

    const after = stored(sdkSecretOf(rotating, rotated.tokens, urls));
    expect(after.metadata?.annotations?.[ROTATED_FOR_ANNOTATION]).toBe('2026-11-22');
    expect(tokensFor(rotating, after)).toEqual({ tokens: rotated.tokens, fresh: false });
    expect(secretUpToDate(secret, sdkSecretOf(rotating, rotated.tokens, urls))).toBe(false);
  });

  it('takes a registered queue project\'s signing keys from the registry: the Secret follows each rotation, its tokens kept', () => {
    const project = queueProject();
    const created = tokensFor(project, undefined).tokens;
    const secret = stored(sdkSecretOf(project, created, urls));
    // The registry holds the Secret's keys: nothing changes.
    const same = tokensFor(project, secret, { current: created.currentSigningKey ?? '', next: created.nextSigningKey ?? '' });
    expect(same).toEqual({ tokens: created, fresh: false });
    expect(secretUpToDate(secret, sdkSecretOf(project, same.tokens, urls))).toBe(true);

    // Two rotations later the Secret's keys verify nothing: the registry's replace them, the tokens stay.
    const rotated = { current: 'sig_third', next: 'sig_fourth' };
    const after = tokensFor(project, secret, rotated);
    expect(after).toEqual({ tokens: { ...created, currentSigningKey: 'sig_third', nextSigningKey: 'sig_fourth' }, fresh: false });
    const wanted = sdkSecretOf(project, after.tokens, urls);
    expect(secretUpToDate(secret, wanted)).toBe(false);
    expect(secretText(wanted)).toMatchObject({ QSTASH_CURRENT_SIGNING_KEY: 'sig_third', QSTASH_NEXT_SIGNING_KEY: 'sig_fourth', QSTASH_TOKEN: created.standard });

    // A Secret without signing keys of a registered project gets the registry's, not new ones, and keeps its tokens.
    const bare = stored({ ...secret, stringData: { QSTASH_TOKEN: created.standard, QSTASH_READONLY_TOKEN: created.readonly } } as V1Secret);
    expect(tokensFor(project, bare, rotated)).toEqual(after);
    // Before the project is registered, the Secret's keys seed it; without them, new ones.
    expect(tokensFor(project, bare).fresh).toBe(true);
  });

  it('tells which namespace to reconcile when a project\'s registered keys differ from those its Secret was written with', () => {
    const written = new SecretSigningKeys();
    const key = 'restash:v1:queue:project:acme.jobs';
    expect(written.behind(key, { current: 'a', next: 'b' })).toBeUndefined(); // no Secret written by this process
    written.wrote(key, 'acme', { current: 'a', next: 'b' });
    expect(written.behind(key, { current: 'a', next: 'b' })).toBeUndefined(); // its own apply announced: nothing to do
    expect(written.behind(key, { current: 'b', next: 'c' })).toBe('acme'); // rotated
    expect(written.behind(key, undefined)).toBeUndefined(); // the record is gone: the deletion is reconciled anyway
    expect(written.behind('restash:v1:kv:database:acme.main', { current: 'b', next: 'c' })).toBeUndefined();
    written.keepOnly('other', new Set());
    expect(written.behind(key, { current: 'b', next: 'c' })).toBe('acme');
    written.keepOnly('acme', new Set());
    expect(written.behind(key, { current: 'b', next: 'c' })).toBeUndefined();
  });

  it('writes the stream credentials under the SDK names, user names from the namespace and name', () => {
    const cluster: StreamCluster = {
      apiVersion: 'restash.dev/v1alpha1',
      kind: 'StreamCluster',
      metadata: { name: 'events', namespace: 'acme', uid: 'u' },
      spec: { topics: [], limits: { maxRequestBytes: 1024, dailyRequests: 0 } },
    };
    const { tokens } = tokensFor(cluster, undefined);
    expect(sdkSecretOf(cluster, tokens, urls).stringData).toEqual({
      UPSTASH_KAFKA_REST_URL: 'http://stream',
      UPSTASH_KAFKA_REST_USERNAME: 'acme.events',
      UPSTASH_KAFKA_REST_PASSWORD: tokens.standard,
      UPSTASH_KAFKA_REST_READONLY_USERNAME: 'acme.events.readonly',
      UPSTASH_KAFKA_REST_READONLY_PASSWORD: tokens.readonly,
    });
    expect(() => sdkSecretOf({ ...cluster, metadata: { name: 'events', namespace: 'acme' } }, tokens, urls)).toThrow(/no uid/);
  });
});

describe('aclStateSecretOf and aclStateOf', () => {
  const database = { ...queueProject(), kind: 'KvDatabase', metadata: { name: 'cache', namespace: 'acme', uid: 'uid-2' } } as unknown as QueueProject;
  const state = {
    tokens: [{ digest: 'a'.repeat(64), tenant: 'acme', api: 'kv' as const, resource: 'acme.cache', role: 'acl' as const, aclUser: 'acme.cache:reader', sealedPassword: 'sealed' }],
    users: { 'acme.cache:reader': 'sealed:v1:rules' },
  };

  it("keeps a KV database's run-time ACL state in a Secret of its own, named apart from every resource's, owned by the database", () => {
    const secret = stored(aclStateSecretOf(database, state));
    expect(secret.metadata?.name).toBe('cache.acl');
    expect(ownedBy(secret, database)).toBe(true);
    expect(aclStateOf(secret)).toEqual(state);
    expect(secretUpToDate(secret, aclStateSecretOf(database, state))).toBe(true);
    expect(secretUpToDate(secret, aclStateSecretOf(database, { ...state, users: {} }))).toBe(false);
  });

  it('reads nothing from a Secret without the state, or with one that does not parse', () => {
    expect(aclStateOf(undefined)).toBeUndefined();
    expect(aclStateOf({ data: { 'acl-state.json': Buffer.from('{"tokens":').toString('base64') } })).toBeUndefined();
    expect(aclStateOf({ data: { 'acl-state.json': Buffer.from('{"tokens":[{"digest":"x"}],"users":{}}').toString('base64') } })).toBeUndefined();
  });
});
