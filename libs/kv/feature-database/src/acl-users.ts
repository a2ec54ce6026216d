import { Logger } from '@nestjs/common';
import { type KvBackend, isReplyError } from '@restash/kv/data-access-redis';
import { KvError, type PreparedCommand, type RedisCommand, type Reply } from '@restash/kv/util-command';

import { generateToken, registryKeys, sealWithToken, tokenDigest } from '@restash/shared/data-access-registry';
import { logEvent } from '@restash/shared/util-http';
import type { KvBackendFailures } from './backend-failures';
import type { KvRegistry, KvRuntimeRecords, KvSession, RegistryCall } from './ports';

/**
 * A tenant's Redis ACL users and ACL RESTTOKEN tokens (docs/kv.md, "KV: tokens"): what the gateway records in the
 * registry when a tenant changes its users, so that every replica drops stale connections and a server that
 * lacks a user (a promoted replica) gets it again.
 */
export class AclUsers {
  private readonly logger = new Logger('KvSessions');

  constructor(
    private readonly registry: KvRegistry,
    private readonly records: KvRuntimeRecords,
    private readonly registryCall: RegistryCall,
    private readonly failures: KvBackendFailures,
  ) {}

  /**
   * Sets a tenant's Redis ACL user again, from the rules the registry recorded (RuntimeStore.putKvAclUser), on a
   * server that does not have it: Redis does not replicate ACL users, so a replica Sentinel promoted lacks them
   * (docs/configuration.md, "Redis URLs and Redis Sentinel").
   * @returns whether the user was set; false when the server has the user (its password changed) or none is recorded
   * @throws Error when Redis or the control Redis cannot be reached
   */
  async restoreAclUser(session: KvSession, username: string): Promise<boolean> {
    // Only the tenant's own users (the database's prefix), never the gateway's or the read-only one.
    if (!username.startsWith(session.policy.prefix)) return false;
    if ((await session.backend.run(['acl', 'getuser', username])) !== null) return false;
    const rules = await this.registryCall(session.tenant, () => this.registry.kvAclUserRules(session.database.id, username));
    if (!rules) return false;
    await session.backend.run(['acl', 'setuser', username, 'reset', ...rules]);
    logEvent(this.logger, 'log', 'kv.acl-user.restored', {
      engine: 'kv-redis',
      tenant: session.tenant,
      database: session.database.id,
      user: username,
      text: "the database's server lacked a tenant ACL user (a promoted replica?): set it again from the registry",
    });
    return true;
  }

  /**
   * ACL SETUSER and DELUSER may change a user's password or rights, and Redis keeps existing
   * connections authenticated: drop ours for those users here and on every other replica.
   */
  async afterAclChanges(session: KvSession, commands: RedisCommand[]): Promise<void> {
    for (const command of commands) {
      if (command.label !== 'acl|setuser' && command.label !== 'acl|deluser') continue;
      for (const arg of command.args.slice(2, command.label === 'acl|setuser' ? 3 : undefined)) {
        const user = String(arg);
        session.backend.dropUser(user);
        // What the server has now is recorded, for a server that will lack it (restoreAclUser).
        const rules = command.label === 'acl|setuser' ? await this.failures.call(session.tenant, () => aclRules(session.backend, user)) : null;
        await this.registryCall(session.tenant, async () => {
          await this.records.putKvAclUser(session.tenant, session.database.id, user, rules);
          await this.records.announce(registryKeys.kvAclUser(session.database.id, user));
        });
      }
    }
  }

  /** ACL RESTTOKEN: checks the user's password by authenticating as the user, then stores a new token. */
  async mintAclToken(session: KvSession, command: Extract<PreparedCommand, { kind: 'acl-resttoken' }>): Promise<string> {
    try {
      await session.backend.asUser(command.redisUsername, command.password);
    } catch (error) {
      if (!isReplyError(error)) throw this.failures.failure(session.tenant, error);
      throw KvError.badRequest(`ERR Wrong password or user ${command.username} does not exist`);
    }
    const token = generateToken();
    await this.registryCall(session.tenant, () =>
      this.records.putRuntimeToken({
        digest: tokenDigest(token),
        tenant: session.tenant,
        api: 'kv',
        resource: session.database.id,
        role: 'acl',
        aclUser: command.redisUsername,
        sealedPassword: sealWithToken(token, command.password),
      }),
    );
    return token;
  }
}

/**
 * The rules of Redis ACL user `user` as `ACL LIST` prints them, after `user <name>` (flags, `#<sha256>` password
 * hashes, key and channel patterns, commands, `(…)` selectors), or null when the server has no such user.
 */
async function aclRules(backend: KvBackend, user: string): Promise<string[] | null> {
  const lines = (await backend.run(['acl', 'list'])) as Reply[];
  for (const line of lines) {
    const [, name, ...rules] = String(line).match(/\([^)]*\)|\S+/g) ?? [];
    if (name === user) return rules;
  }
  return null;
}
