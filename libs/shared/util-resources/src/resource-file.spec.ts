import { parseResourceFile } from './resource-file';

const env = { PASSWORD: 's3cret', PORT: '6380' };

const FILE = `
apiVersion: v1
kind: Secret
metadata: { name: redis, namespace: acme }
stringData:
  url: redis://gw:\${PASSWORD}@127.0.0.1:\${PORT}/0
data:
  other: aGVsbG8=
---
apiVersion: restash.dev/v1alpha1
kind: KvDatabase
metadata: { name: main, namespace: acme }
spec:
  redis:
    external:
      urlSecretRef: { name: redis, key: url }
---
apiVersion: restash.dev/v1alpha1
kind: QueueProject
metadata: { name: jobs, namespace: acme }
---
`;

describe('parseResourceFile', () => {
  it('reads resources with their defaults and Secrets with ${VAR} expanded and data decoded', () => {
    const { resources, secrets } = parseResourceFile(FILE, env);
    expect(resources.map((r) => `${r.kind} ${r.metadata.namespace}/${r.metadata.name}`)).toEqual(['KvDatabase acme/main', 'QueueProject acme/jobs']);
    expect(resources[0].spec).toEqual({
      redis: { external: { urlSecretRef: { name: 'redis', key: 'url' } } },
      limits: { maxRequestBytes: 10_485_760, dailyRequests: 0 },
      durability: 'async',
    });
    expect(resources[1].spec).toEqual({ retries: { default: 3, max: 10 }, destinations: { inNamespace: false }, limits: { maxRequestBytes: 1_048_576, dailyRequests: 0 } });
    expect(secrets.get('acme/redis')).toEqual({ url: 'redis://gw:s3cret@127.0.0.1:6380/0', other: 'hello' });
  });

  it('lists every problem at once, naming the document and the field', () => {
    const text = `
apiVersion: restash.dev/v1alpha1
kind: VectorIndex
metadata: { name: docs, namespace: acme }
spec: { dimension: 0, metric: COSINE }
---
apiVersion: restash.dev/v1alpha1
kind: Tenant
metadata: { name: acme }
---
apiVersion: restash.dev/v1alpha1
kind: StreamCluster
metadata: { name: events }
spec: { topics: [{ name: "\${TOPIC}" }] }
---
apiVersion: restash.dev/v1alpha1
kind: QueueProject
metadata: { name: jobs, namespace: acme }
---
apiVersion: restash.dev/v1alpha1
kind: QueueProject
metadata: { name: jobs, namespace: acme }
spec: { retries: { default: 4, max: 2 } }
---
apiVersion: restash.dev/v1alpha1
kind: QueueProject
metadata: { name: jobs, namespace: acme }
`;
    expect(() => parseResourceFile(text, {})).toThrow(
      [
        'invalid resources file:',
        '  - document 1 (VectorIndex acme/docs) spec.dimension: Too small: expected number to be >=1',
        '  - document 1 (VectorIndex acme/docs) spec: Unrecognized key: "metric"',
        '  - document 2 (Tenant acme) kind: unknown kind "Tenant"; expected one of KvDatabase, VectorIndex, StreamCluster, QueueProject, Secret',
        '  - document 3 (StreamCluster events) spec.topics.0.name: environment variable TOPIC is not set',
        '  - document 3 (StreamCluster events) metadata.namespace: Invalid input: expected string, received undefined',
        '  - document 5 (QueueProject acme/jobs) spec.retries.default: retries.default must not exceed retries.max',
        '  - document 6 (QueueProject acme/jobs): QueueProject acme/jobs is already declared by document 4',
      ].join('\n'),
    );
  });

  it('refuses YAML it cannot read, and a Secret whose data is not base64', () => {
    expect(() => parseResourceFile('kind: [', {})).toThrow(/^invalid resources file:\n {2}- document 1: /);
    expect(() => parseResourceFile('kind: constructor\n', {})).toThrow('document 1 kind: unknown kind "constructor"');
    expect(() => parseResourceFile('apiVersion: v1\nkind: Secret\nmetadata: { name: s, namespace: a }\ndata: { k: "not base64!" }\n', {})).toThrow(
      'document 1 (Secret a/s) data.k: must be base64',
    );
  });
});
