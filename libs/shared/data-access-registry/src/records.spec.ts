import { parseKvAclUserKey, registryKeys } from './records';

describe('registry keys', () => {
  it('reads back the database and user of an ACL-user announcement, users with ":" included', () => {
    expect(parseKvAclUserKey(registryKeys.kvAclUser('demo.main', 'demo.main:alice'))).toEqual({ database: 'demo.main', user: 'demo.main:alice' });
    expect(parseKvAclUserKey(registryKeys.kvDatabase('demo.main'))).toBeUndefined();
  });
});
