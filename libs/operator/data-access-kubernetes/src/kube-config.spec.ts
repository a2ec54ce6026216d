import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { kubeConfigFrom } from './kube-config';

describe('kubeConfigFrom', () => {
  const dir = mkdtempSync(join(tmpdir(), 'kubeconfig-'));
  const file = join(dir, 'config');
  writeFileSync(
    file,
    `apiVersion: v1
kind: Config
clusters: [{ name: local, cluster: { server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true } }]
users: [{ name: admin, user: { token: abc } }]
contexts: [{ name: admin@local, context: { cluster: local, user: admin } }]
current-context: admin@local
`,
  );

  it('reads the file KUBECONFIG names, ahead of the in-cluster variables', () => {
    const config = kubeConfigFrom({ KUBECONFIG: file, KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '443' });
    expect(config.getCurrentCluster()?.server).toBe('https://127.0.0.1:6443');
  });

  it('uses the service account in a pod', () => {
    const config = kubeConfigFrom({ KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' }, '/sa');
    expect(config.getCurrentCluster()).toMatchObject({ server: 'https://[fd00::1]:443', caFile: '/sa/ca.crt' });
    expect(config.getCurrentUser()?.authProvider).toEqual({ name: 'tokenFile', config: { tokenFile: '/sa/token' } });
  });

  it('fails clearly without either, with a list of files, or with a missing file', () => {
    expect(() => kubeConfigFrom({})).toThrow(/set KUBECONFIG/);
    expect(() => kubeConfigFrom({ KUBECONFIG: `${file}:${file}` })).toThrow(/one file/);
    expect(() => kubeConfigFrom({ KUBECONFIG: join(dir, 'missing') })).toThrow(/ENOENT/);
  });
});
