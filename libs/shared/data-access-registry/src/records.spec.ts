import { parseKvAclUserKey, parseTenantAclTokensKey, registryKeys } from './records';

describe('registry keys', () => {
  it('reads back the database and user of an ACL-user announcement, users with ":" included', () => {
    expect(parseKvAclUserKey(registryKeys.kvAclUser('demo.main', 'demo.main:alice'))).toEqual({ database: 'demo.main', user: 'demo.main:alice' });
    expect(parseKvAclUserKey(registryKeys.kvDatabase('demo.main'))).toBeUndefined();
  });

  it("reads back the tenant of its run-time ACL state's announcement, and nothing else", () => {
    expect(parseTenantAclTokensKey(registryKeys.tenantAclTokens('shop'))).toBe('shop');
    expect(parseTenantAclTokensKey(registryKeys.tenant('shop'))).toBeUndefined();
    expect(parseTenantAclTokensKey(registryKeys.tenantTeardown('shop'))).toBeUndefined();
    expect(parseTenantAclTokensKey(registryKeys.kvAclRules('shop.cache'))).toBeUndefined();
  });
});
