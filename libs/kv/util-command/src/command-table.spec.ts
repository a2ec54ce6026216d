import { CommandTable, keyArguments } from './command-table';

/** A COMMAND entry as Redis 7 sends it: name, arity, flags, first key, last key, step, categories, tips, key specs, subcommands. */
const entry = (name: string, flags: string[], keys: [number, number, number], subcommands: unknown[] = []) => [name, -1, flags, ...keys, [], [], [], subcommands];

describe('keyArguments', () => {
  const table = CommandTable.fromCommandReply([
    entry('set', ['write'], [1, 1, 1]),
    entry('mset', ['write'], [1, -1, 2]),
    entry('rename', ['write'], [1, 2, 1]),
    entry('flushdb', ['write'], [0, 0, 0]),
    entry('eval', ['movablekeys'], [0, 0, 0]),
    entry('object', [], [0, 0, 0], [entry('object|encoding', ['readonly'], [2, 2, 1])]),
  ]);
  const keys = (...args: string[]) => keyArguments(table.resolve(args[0] as string, args[1]) as never, args);

  it('reads the key positions of COMMAND: first, last (negative from the end) and step', () => {
    expect(keys('set', 'k', 'v')).toEqual(['k']);
    expect(keys('mset', 'a', '1', 'b', '2')).toEqual(['a', 'b']);
    expect(keys('rename', 'a', 'b')).toEqual(['a', 'b']);
    expect(keys('flushdb')).toEqual([]);
    expect(keys('object', 'encoding', 'k')).toEqual(['k']);
  });

  it('leaves movable keys to the server (COMMAND GETKEYS)', () => {
    expect(keys('eval', 'return 1', '1', 'k')).toBeUndefined();
  });
});
