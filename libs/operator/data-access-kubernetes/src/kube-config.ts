import { KubeConfig } from '@kubernetes/client-node';
import { isIPv6 } from 'node:net';
import { delimiter } from 'node:path';

/** Where a pod's service-account credentials are mounted. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/**
 * The operator's connection to its API server: the kubeconfig file named by `KUBECONFIG` (one
 * file, its current context), else the in-cluster service account when `KUBERNETES_SERVICE_HOST`
 * and `KUBERNETES_SERVICE_PORT` are set, as in every pod (the CA and the token are read from
 * `serviceAccountDir`; the token file is re-read as the kubelet rotates it).
 *
 * @throws Error when `KUBECONFIG` lists several files, when the file cannot be read or has no
 *   current cluster, or when neither source is available
 */
export function kubeConfigFrom(env: NodeJS.ProcessEnv = process.env, serviceAccountDir = SERVICE_ACCOUNT_DIR): KubeConfig {
  const config = new KubeConfig();
  const file = env['KUBECONFIG']?.trim();
  if (file) {
    if (file.includes(delimiter)) throw new Error(`KUBECONFIG must name one file, got ${JSON.stringify(file)}`);
    config.loadFromFile(file);
    if (!config.getCurrentCluster()) throw new Error(`KUBECONFIG ${file} has no current context with a cluster`);
    return config;
  }
  const host = env['KUBERNETES_SERVICE_HOST'];
  const port = env['KUBERNETES_SERVICE_PORT'];
  if (host && port) {
    config.loadFromOptions({
      clusters: [{ name: 'in-cluster', server: `https://${isIPv6(host) ? `[${host}]` : host}:${port}`, caFile: `${serviceAccountDir}/ca.crt`, skipTLSVerify: false }],
      users: [{ name: 'service-account', authProvider: { name: 'tokenFile', config: { tokenFile: `${serviceAccountDir}/token` } } }],
      contexts: [{ name: 'in-cluster', cluster: 'in-cluster', user: 'service-account' }],
      currentContext: 'in-cluster',
    });
    return config;
  }
  throw new Error('no Kubernetes API server: set KUBECONFIG, or run in a pod (KUBERNETES_SERVICE_HOST/PORT)');
}
