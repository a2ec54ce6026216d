import { clientSetinfo, fcallReadOnly, libraryCode, noAckRead, readOnlyShim } from './composite';
import type { Reply } from './encode';
import type { CommandArgs } from './request';

const b = (s: string) => Buffer.from(s);

/** FUNCTION LIST WITHCODE in RESP2: one flat array per library. */
const functionList: Reply = [
  [b('library_name'), b('other'), b('engine'), b('LUA'), b('functions'), [[b('name'), b('nope'), b('description'), null, b('flags'), []]], b('library_code'), b('#!lua name=other\n')],
  [
    b('library_name'), b('lib'), b('engine'), b('LUA'),
    b('functions'), [[b('name'), b('getter'), b('description'), null, b('flags'), []]],
    b('library_code'), b("#!lua name=lib\nredis.register_function('getter', function(keys) return redis.call('GET', keys[1]) end)"),
  ],
];

describe('FCALL_RO as Upstash runs it', () => {
  it('finds the code of the library registering a function', () => {
    expect(libraryCode(functionList, 'getter')).toContain("register_function('getter'");
    expect(libraryCode(functionList, 'missing')).toBeUndefined();
  });

  it('wraps the library so that only the asked function is kept, without its #! line', () => {
    const shim = readOnlyShim("#!lua name=lib\nredis.register_function('getter', f)", 'getter');
    expect(shim).not.toContain('#!lua');
    expect(shim).toContain("if n == 'getter' then restash_fn = f end");
    expect(shim.endsWith('return restash_fn(KEYS, ARGV)')).toBe(true);
    expect(() => readOnlyShim('', "x' end os.exit() --")).toThrow(/invalid function name/);
  });

  it('runs FCALL_RO as is, and EVAL_RO of the shim only when Redis refuses a function without no-writes', async () => {
    const ran: CommandArgs[] = [];
    const refuse = new Error('ERR Can not execute a script with write flag using *_ro command.');
    const redis = {
      run: async (args: CommandArgs): Promise<Reply> => {
        ran.push(args);
        if (args[0] === 'fcall_ro') throw refuse;
        if (args[0] === 'function') return functionList;
        return b('value');
      },
    };
    expect(await fcallReadOnly(['FCALL_RO', 'getter', '1', 'k']).run(redis)).toEqual(b('value'));
    expect(ran.map((a) => a[0])).toEqual(['fcall_ro', 'function', 'eval_ro']);
    expect(ran[2]?.slice(2)).toEqual(['1', 'k']);
    await expect(fcallReadOnly(['fcall_ro', 'missing', '0']).run(redis)).rejects.toBe(refuse);
  });
});

describe('CLIENT SETINFO and XREADGROUP … NOACK', () => {
  it('answers CLIENT SETINFO OK without running it, with Redis texts for bad input', async () => {
    expect(await clientSetinfo(['client', 'setinfo', 'LIB-NAME', 'x']).run({ run: () => Promise.reject(new Error('ran')) })).toEqual(b('OK'));
    expect(() => clientSetinfo(['client', 'setinfo', 'lib-name'])).toThrow(/wrong number of arguments/);
    expect(() => clientSetinfo(['client', 'setinfo', 'name', 'x'])).toThrow(/Unrecognized option 'name'/);
  });

  it('runs XREADGROUP … NOACK in a script over its streams, and leaves other reads alone', async () => {
    const read = noAckRead(['XREADGROUP', 'GROUP', 'g', 'c', 'COUNT', '2', 'NOACK', 'STREAMS', 's1', 's2', '>', '>']);
    const ran: CommandArgs[] = [];
    await read?.run({ run: async (args) => (ran.push(args), null) });
    expect(ran[0]?.[0]).toBe('eval');
    expect(ran[0]?.slice(2)).toEqual(['2', 's1', 's2', 'xreadgroup', 'GROUP', 'g', 'c', 'COUNT', '2', 'NOACK', 'STREAMS', 's1', 's2', '>', '>']);
    expect(noAckRead(['xreadgroup', 'group', 'g', 'c', 'streams', 's', '>'])).toBeUndefined();
    expect(noAckRead(['xreadgroup', 'group', 'g', 'c', 'noack', 'streams', 's'])).toBeUndefined();
  });
});
