import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';

// @kubernetes/client-node 2.x is ESM-only; the operator (next) builds on it. This pins that it loads
// in this toolchain (jest's require(esm) on the pinned Node) and reads a kubeconfig as kubectl does.
describe('@kubernetes/client-node', () => {
  it('reads a kubeconfig and builds a CoreV1Api client for its current context', () => {
    const config = new KubeConfig();
    config.loadFromString(`
apiVersion: v1
kind: Config
clusters: [{ name: local, cluster: { server: "https://127.0.0.1:6443", insecure-skip-tls-verify: true } }]
users: [{ name: admin, user: { token: abc } }]
contexts: [{ name: admin@local, context: { cluster: local, user: admin, namespace: restash-system } }]
current-context: admin@local
`);
    expect(config.getCurrentCluster()?.server).toBe('https://127.0.0.1:6443');
    expect(config.getContextObject(config.getCurrentContext())?.namespace).toBe('restash-system');
    expect(config.makeApiClient(CoreV1Api)).toBeInstanceOf(CoreV1Api);
  });
});
