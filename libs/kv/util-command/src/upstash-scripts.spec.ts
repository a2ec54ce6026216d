import { UpstashScriptDigests, scriptDigest, withoutUpstashFlags } from './upstash-scripts';

describe('withoutUpstashFlags', () => {
  it("removes Upstash's allow-key-locking from the shebang's flags and keeps the rest of the script byte for byte", () => {
    expect(withoutUpstashFlags('#!lua flags=allow-key-locking\n  local key = KEYS[1]\n')).toBe('#!lua\n  local key = KEYS[1]\n');
    expect(withoutUpstashFlags('#!lua flags=allow-key-locking,no-writes\nreturn 1')).toBe('#!lua flags=no-writes\nreturn 1');
    expect(withoutUpstashFlags('#!lua flags=no-writes,allow-key-locking,allow-oom\nreturn 1')).toBe('#!lua flags=no-writes,allow-oom\nreturn 1');
    expect(withoutUpstashFlags('#!lua flags=allow-key-locking')).toBe('#!lua');
    const bytes = Buffer.concat([Buffer.from('#!lua flags=allow-key-locking\nreturn "'), Buffer.from([0xff, 0xc3, 0xa9]), Buffer.from('"')]);
    expect(withoutUpstashFlags(bytes)).toEqual(Buffer.concat([Buffer.from('#!lua\nreturn "'), Buffer.from([0xff, 0xc3, 0xa9]), Buffer.from('"')]));
  });

  it('leaves scripts without the flag alone (undefined)', () => {
    expect(withoutUpstashFlags('return 1')).toBeUndefined();
    expect(withoutUpstashFlags('#!lua flags=no-writes\nreturn 1')).toBeUndefined();
    expect(withoutUpstashFlags('#!lua\nreturn "flags=allow-key-locking"')).toBeUndefined();
    expect(withoutUpstashFlags('\n#!lua flags=allow-key-locking\nreturn 1')).toBeUndefined();
    expect(withoutUpstashFlags(Buffer.from('return 1'))).toBeUndefined();
  });
});

describe('scriptDigest', () => {
  it("is Redis's SHA1 of the script's bytes, as SCRIPT LOAD 'return 1' answers it", () => {
    expect(scriptDigest('return 1')).toBe('e0e1f9fabfc9d4800c877a703b823ac0578ff8db');
    expect(scriptDigest(Buffer.from('return 1'))).toBe('e0e1f9fabfc9d4800c877a703b823ac0578ff8db');
  });
});

describe('UpstashScriptDigests', () => {
  const flagged = '#!lua flags=allow-key-locking\nreturn 1';
  const plain = '#!lua\nreturn 1';

  it('after an EVAL, EVAL_RO or SCRIPT LOAD of a flagged script, calls by its digest use the digest Redis knows', () => {
    for (const load of [['EVAL', flagged, '0'], ['eval_ro', flagged, '0'], ['script', 'LOAD', flagged]]) {
      const digests = new UpstashScriptDigests();
      expect(digests.apply(['evalsha', scriptDigest(flagged), '0'])).toEqual(['evalsha', scriptDigest(flagged), '0']);
      expect(digests.apply(load)).toBe(load);
      expect(digests.apply(['evalsha', scriptDigest(flagged), '1', 'k', 'v'])).toEqual(['evalsha', scriptDigest(plain), '1', 'k', 'v']);
      expect(digests.apply(['EVALSHA_RO', scriptDigest(flagged).toUpperCase(), '0'])).toEqual(['EVALSHA_RO', scriptDigest(plain), '0']);
      expect(digests.apply(['script', 'exists', 'abc', scriptDigest(flagged)])).toEqual(['script', 'exists', 'abc', scriptDigest(plain)]);
    }
  });

  it('changes nothing for scripts without the flag, nor the keys and arguments of a call', () => {
    const digests = new UpstashScriptDigests();
    digests.apply(['eval', 'return 1', '0']);
    digests.apply(['eval', flagged, '0']);
    expect(digests.apply(['evalsha', scriptDigest('return 1'), '0'])).toEqual(['evalsha', scriptDigest('return 1'), '0']);
    const call = ['evalsha', 'f'.repeat(40), '1', scriptDigest(flagged), scriptDigest(flagged)];
    expect(digests.apply(call)).toEqual(call);
    expect(digests.apply(['set', scriptDigest(flagged), 'v'])).toEqual(['set', scriptDigest(flagged), 'v']);
  });

  it('keeps at most its capacity, forgetting the oldest first', () => {
    const digests = new UpstashScriptDigests(2);
    const scripts = ['a', 'b', 'c'].map((n) => `#!lua flags=allow-key-locking\nreturn '${n}'`);
    for (const script of scripts) digests.apply(['eval', script, '0']);
    const resolved = scripts.map((script) => digests.apply(['evalsha', scriptDigest(script), '0'])[1]);
    expect(resolved).toEqual([scriptDigest(scripts[0] as string), ...scripts.slice(1).map((s) => scriptDigest(s.replace(' flags=allow-key-locking', '')))]);
  });
});
