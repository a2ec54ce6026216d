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
