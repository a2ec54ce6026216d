import { CommandTable } from './command-table';
import { gatewayUserRule, readonlyUserRules } from './gateway-user';

/** A COMMAND entry in the shape Redis 7 sends (name, arity, flags, …). */
const entry = (name: string) => [name, -1, ['readonly'], 0, 0, 0, [], [], [], []];

describe('the Redis users of the gateway', () => {
  it('denies MIGRATE to the gateway’s own user', () => {
    expect(gatewayUserRule('pw')).toBe('user restash-gateway on >pw ~* &* +@all -migrate');
  });

  it('denies the read-only token’s user every write, KEYS, SCAN, PUBLISH, and the search module’s writes flagged readonly where the server has them', () => {
    const plain = CommandTable.fromCommandReply([entry('get'), entry('keys')]);
    expect(readonlyUserRules(plain)).toEqual(['~*', '&*', '+@all', '-@write', '-@admin', '-keys', '-scan', '-publish', '-spublish', '-migrate']);
    const search = CommandTable.fromCommandReply([entry('get'), entry('FT.ALIASADD'), entry('FT.DICTADD'), entry('FT.CONFIG'), entry('FT.SEARCH')]);
    expect(readonlyUserRules(search).slice(10)).toEqual(['-ft.aliasadd', '-ft.dictadd', '-ft.config']);
  });
});
