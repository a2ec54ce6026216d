import type { CommandTable } from './command-table';
import { MODULE_WRITES } from './policy';

/** The gateway's own ACL user on every KV database's Redis server; tenants never get its password. */
export const GATEWAY_REDIS_USER = 'restash-gateway';

/**
 * The ACL rule of the gateway's user on a KV database's server, as a redis.conf or ACL file line: every
 * command but MIGRATE (tenant scripts run as that user, and MIGRATE would connect the server anywhere). The
 * server's default user is off beside it (`user default off`). The local stack's servers and the operator's
 * managed ones declare the same rule.
 */
export function gatewayUserRule(password: string): string {
  return `user ${GATEWAY_REDIS_USER} on >${password} ~* &* +@all -migrate`;
}

/** The Redis user the commands of read-only tokens run as (KvBackend.asReadonly), beside the gateway's own. */
export const READONLY_REDIS_USER = 'restash-readonly';

/**
 * The ACL rules of {@link READONLY_REDIS_USER} on a server with this command table: reads only (`-@write`), and
 * not the reads a read-only token is refused (KEYS, SCAN, PUBLISH; docs/kv.md, "KV: tokens"), so that Redis refuses
 * them inside the scripts and functions the token runs too. Module commands that change state though RediSearch
 * flags them `readonly` (FT.ALIASADD …, FT.DICTADD …) and FT.CONFIG are denied by name when the server has them
 * (an ACL rule naming a command the server lacks is an error). FT.CURSOR DEL cannot be told from FT.CURSOR READ
 * by an ACL rule, so a read-only token's script can still drop a cursor.
 */
export function readonlyUserRules(table: CommandTable): string[] {
  const modules = [...MODULE_WRITES, 'ft.config'].filter((name) => table.resolve(name, undefined) !== undefined);
  return ['~*', '&*', '+@all', '-@write', '-@admin', '-keys', '-scan', '-publish', '-spublish', '-migrate', ...modules.map((name) => `-${name}`)];
}

/**
 * The redis.conf lines that bound the memory of a KV database's server (docs/kv.md, "KV: limits"): `maxmemory`, three
 * quarters of `memoryBytes`, never evicting (writes past it get Redis's own `OOM` error, as Upstash's databases at
 * their size limit), and the output-buffer limit of normal clients, a quarter of it: a client whose unread replies
 * pass it is closed and its replies dropped (Redis 7.0 and 8.2 then also stop building the reply), as Redis cuts a
 * slow subscriber. Without it one `SRANDMEMBER k -9223372036854775807` made Redis 8.2 allocate until the kernel
 * killed it (the gateway refuses that count too: checkCountArguments). The output-buffer limit must stay above every database's `maxRequestBytes`, the largest
 * reply the gateway reads.
 * @param memoryBytes the memory the server may hold in all (a managed server's container limit)
 */
export function kvServerMemoryConfig(memoryBytes: number): string[] {
  const replies = Math.floor(memoryBytes / 4);
  return [`maxmemory ${Math.floor(memoryBytes * 0.75)}`, 'maxmemory-policy noeviction', `client-output-buffer-limit normal ${replies} 0 0`];
}
