import { parseEnvFile } from './k8s';

describe('parseEnvFile', () => {
  it('reads the export lines of cluster.sh env and ignores comments and other lines', () => {
    const text = `# Written by deploy/k8s/cluster.sh up; removed by down. \`source\` it.
export KUBECONFIG=/state/kubeconfig
export RESTASH_REDIS_IMAGE=localhost/restash/redis:7.0.15
  export RESTASH_K8S_BIN=/cache/bin
KUBECONFIG=/not/exported
`;
    expect(parseEnvFile(text)).toEqual({
      KUBECONFIG: '/state/kubeconfig',
      RESTASH_REDIS_IMAGE: 'localhost/restash/redis:7.0.15',
      RESTASH_K8S_BIN: '/cache/bin',
    });
  });
});
