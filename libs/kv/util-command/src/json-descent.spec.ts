import type { Reply } from './encode';
import { jsonDescent, jsonDescentReply } from './json-descent';

const b = (text: string) => Buffer.from(text);
const textOf = (reply: Reply) => (Buffer.isBuffer(reply) ? reply.toString() : reply);

/** The tenant's reply for `args`, RedisJSON answering the rewritten command with `engine` (given the args sent). */
function answer(args: string[], engine: (sent: string[]) => Reply): Reply {
  const plan = jsonDescent(args[0]?.toLowerCase() ?? '', args);
  if (!plan) throw new Error('not rewritten');
  return jsonDescentReply(plan.rewrite, engine(plan.args.map(String)));
}

describe('jsonDescent', () => {
  it("lists $..name matches deepest first, as Upstash (upstash/redis-js json_get and json_mget tests)", () => {
    const doc = '{"a":2,"b":3,"nested":{"a":4,"b":null}}';
    expect(textOf(answer(['JSON.GET', 'k', '$..b'], (sent) => {
      expect(sent).toEqual(['JSON.GET', 'k', '$', '$..b']);
      return b(`{"$":[${doc}],"$..b":[3,null]}`);
    }))).toBe('[null,3]');
    expect(JSON.parse(String(textOf(answer(['JSON.GET', 'k', '$..a', '$..b'], () => b(`{"$":[${doc}],"$..a":[2,4],"$..b":[3,null]}`)))))).toEqual({ '$..a': [4, 2], '$..b': [null, 3] });
    const mget = answer(['JSON.MGET', 'k1', 'k2', 'gone', '$..a'], (sent) => {
      expect(sent).toEqual(['JSON.MGET', 'k1', 'k2', 'gone', '$']);
      return [b('[{"a":1,"b":2,"nested":{"a":3},"c":null}]'), b('[{"a":4,"b":5,"nested":{"a":6},"c":null}]'), null];
    });
    expect((mget as Reply[]).map(textOf)).toEqual(['[3,1]', '[6,4]', null]);
  });

  it('visits members in document order, arrays included, then the value itself; follows .member chains; keeps number text', () => {
    const doc = '{"x":{"a":1,"y":{"a":2}},"a":0,"z":[{"a":5},{"a":6}],"big":{"a":12345678901234567890,"f":1.50}}';
    const get = (path: string) => textOf(answer(['JSON.GET', 'k', path], () => b(`{"$":[${doc}]}`)));
    expect(get('$..a')).toBe('[2,1,5,6,12345678901234567890,0]');
    expect(get('$..y.a')).toBe('[2]');
    expect(get('$..big')).toBe('[{"a":12345678901234567890,"f":1.50}]');
    expect(get('$..nothing')).toBe('[]');
    // Other paths of the same command keep RedisJSON's answer.
    expect(JSON.parse(String(textOf(answer(['JSON.GET', 'k', '$.x.a', '$..a'], () => b(`{"$":[${doc}],"$.x.a":[1]}`)))))).toEqual({ '$.x.a': [1], '$..a': [2, 1, 5, 6, 12345678901234567890, 0] });
  });

  it('leaves other commands and paths to RedisJSON, and nil and errors as they come', () => {
    for (const args of [['JSON.GET', 'k'], ['JSON.GET', 'k', '$.a'], ['JSON.GET', 'k', '..a'], ['JSON.GET', 'k', 'INDENT', ' ', '$..a'], ['JSON.GET', 'k', '$..a', 'b'], ['JSON.GET', 'k', '$..*'], ['JSON.MGET', 'k', '$.a'], ['GET', 'k', '$..a']]) {
      expect([args, jsonDescent(args[0]?.toLowerCase() ?? '', args)]).toEqual([args, undefined]);
    }
    expect(answer(['JSON.GET', 'gone', '$..a'], () => null)).toBeNull();
    const error = new Error('WRONGTYPE');
    expect(answer(['JSON.GET', 'k', '$..a'], () => error)).toBe(error);
  });
});
