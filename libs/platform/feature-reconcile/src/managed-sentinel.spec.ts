import { podHost, sentinelConfig, sentinelNames, serverConfig, serverRole } from './managed-sentinel';

const host = (pod: string) => podHost(pod, 'redis-cache-headless', 'shop');
const first = host('redis-cache-0');

describe('serverRole', () => {
  it('makes the first pod the primary of a new database, the others its replicas', () => {
    expect(serverRole(first, first, undefined, false)).toEqual({ role: 'primary' });
    expect(serverRole(host('redis-cache-2'), first, undefined, false)).toEqual({ role: 'replica', of: first });
  });

  it('follows the primary the sentinels name, whichever pod it is', () => {
    expect(serverRole(first, first, host('redis-cache-1'), true)).toEqual({ role: 'replica', of: host('redis-cache-1') });
    expect(serverRole(host('redis-cache-1'), first, host('redis-cache-1'), true)).toEqual({ role: 'primary' });
  });

  it('never starts an empty primary: a named primary that lost its volume waits for the failover', () => {
    expect(serverRole(host('redis-cache-1'), first, host('redis-cache-1'), false)).toMatchObject({ role: 'wait' });
  });
});

describe('the configuration files', () => {
  it("gives a server its announced name, the gateway user's credentials to replicate with, and its primary", () => {
    const conf = serverConfig('port 6379\naclfile /etc/redis/users.acl\n', host('redis-cache-1'), 'pw', { role: 'replica', of: first });
    expect(conf).toBe(
      `port 6379\naclfile /etc/redis/users.acl\nreplica-announce-ip ${host('redis-cache-1')}\nmasteruser restash-gateway\nmasterauth pw\nreplicaof ${first} 6379\n`,
    );
    expect(serverConfig('port 6379', first, 'pw', { role: 'primary' })).not.toMatch(/replicaof/);
  });

  it('gives a sentinel the primary to monitor, passwords, its announced name and an id of its own that a restart keeps', () => {
    const me = podHost('sentinel-cache-1', sentinelNames('cache').headless, 'shop');
    const conf = sentinelConfig({ me, database: 'cache', primary: first, gatewayPassword: 'pw', sentinelPassword: 'spw' });
    expect(conf).toContain(`sentinel monitor cache ${first} 6379 2\n`);
    expect(conf).toContain('sentinel auth-user cache restash-gateway\nsentinel auth-pass cache pw\n');
    expect(conf).toContain('requirepass spw\nsentinel sentinel-pass spw\n');
    expect(conf).toContain(`sentinel announce-ip ${me}\n`);
    expect(conf).toMatch(/^sentinel myid [0-9a-f]{40}$/m);
    expect(sentinelConfig({ me, database: 'cache', primary: host('redis-cache-2'), gatewayPassword: 'x', sentinelPassword: 'y' }).match(/^sentinel myid .*$/m)?.[0]).toBe(conf.match(/^sentinel myid .*$/m)?.[0]);
    expect(sentinelNames('cache')).toEqual({ statefulSet: 'sentinel-cache', service: 'sentinel-cache', headless: 'sentinel-cache-headless' });
  });
});
