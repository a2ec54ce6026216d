import fc from 'fast-check';
import { KvError } from './kv-error';
import { commandBytes, commandFromJson, commandFromPath, commandsFromJson, parseJsonBody } from './request';

const q = (s = '') => new URLSearchParams(s);

describe('commandFromJson', () => {
  it('keeps strings and turns numbers and booleans into their JSON text', () => {
    expect(commandFromJson(['SET', 'k', 99.5, 'EX', 100, true])).toEqual(['SET', 'k', '99.5', 'EX', '100', 'true']);
  });

  it.each([[[]], ['GET'], [{}], [['GET', null]], [['GET', { a: 1 }]], [['GET', ['x']]]])('refuses %j with a 400', (value) => {
    expect(() => commandFromJson(value)).toThrow(KvError);
  });

  it('parses any array of strings, numbers and booleans into strings of the same count', () => {
    const arg = fc.oneof(fc.string(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.integer());
    fc.assert(
      fc.property(fc.string(), fc.array(arg), (name, rest) => {
        const parsed = commandFromJson([name, ...rest]);
        expect(parsed).toHaveLength(rest.length + 1);
        parsed.forEach((a) => expect(typeof a).toBe('string'));
        // numbers keep their value, so Redis parses the number the client sent (-0 is 0 to Redis, and `==` to us)
        rest.forEach((a, i) => typeof a === 'number' && expect(Number(parsed[i + 1]) === a).toBe(true));
      }),
    );
  });
});

describe('commandsFromJson', () => {
  it('parses a two-dimensional array and names the bad command', () => {
    expect(commandsFromJson([['SET', 'a', 1], ['GET', 'a']])).toEqual([['SET', 'a', '1'], ['GET', 'a']]);
    expect(() => commandsFromJson([])).toThrow(/non-empty/);
    expect(() => commandsFromJson([['GET', 'a'], 'GET'])).toThrow(/command 2/);
  });
});

describe('parseJsonBody', () => {
  it('refuses an empty body and malformed JSON with a 400', () => {
    for (const body of [undefined, Buffer.alloc(0), Buffer.from('["GET",')]) {
      try {
        parseJsonBody(body);
        throw new Error('accepted');
      } catch (e) {
        expect(e).toBeInstanceOf(KvError);
        expect((e as KvError).status).toBe(400);
      }
    }
  });

  it('keeps the text of numbers as the client wrote them when one is not a safe integer, in a command and in a batch', () => {
    const command = Buffer.from('["INCRBY", "n", 9007199254740993, 1.0, 1e3, 0.0000001, 1.50, true]');
    expect(commandFromJson(parseJsonBody(command))).toEqual(['INCRBY', 'n', '9007199254740993', '1.0', '1e3', '0.0000001', '1.50', 'true']);
    // Without a number beyond safe integers, numbers are written as JSON.stringify writes them.
    expect(commandFromJson(parseJsonBody(Buffer.from('["SET", "k", 1.0, 100]')))).toEqual(['SET', 'k', '1', '100']);
    expect(commandsFromJson(parseJsonBody(Buffer.from('[["SET", "k", "v", "EX", 100], ["GET", "k"]]')))).toEqual([['SET', 'k', 'v', 'EX', '100'], ['GET', 'k']]);
    expect(parseJsonBody(Buffer.from('["GET", "k"]'))).toEqual(['GET', 'k']);
    expect(() => commandFromJson(parseJsonBody(Buffer.from('["SET", "k", null]')))).toThrow(/argument 2 must be a string, number or boolean/);
  });
});

describe('commandFromPath', () => {
  it('splits the path, percent-decodes each segment and drops a trailing slash', () => {
    expect(commandFromPath('/set/a%2Fb/v%C3%A9/', undefined, q())).toEqual(['set', 'a/b', 'vé']);
    expect(commandFromPath('/set//v', undefined, q())).toEqual(['set', '', 'v']);
  });

  it('appends the body, then query parameters as NAME VALUE, skipping _token', () => {
    const body = Buffer.from([0xff, 0x00]);
    expect(commandFromPath('/set/k', body, q('EX=100&_token=t&NX'))).toEqual(['set', 'k', body, 'EX', '100', 'NX']);
  });

  it('refuses an empty command and bad percent-encoding', () => {
    expect(() => commandFromPath('/', undefined, q())).toThrow(/no command/);
    expect(() => commandFromPath('/get/%E0%A4%A', undefined, q())).toThrow(/percent-encoding/);
  });

  it('round-trips any segments that were percent-encoded', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'grapheme', minLength: 1 }), { minLength: 1 }), (parts) => {
        const path = `/${['get', ...parts].map(encodeURIComponent).join('/')}`;
        expect(commandFromPath(path, undefined, q())).toEqual(['get', ...parts]);
      }),
    );
  });
});

it('measures commands in bytes', () => {
  expect(commandBytes(['set', 'é', Buffer.alloc(10)])).toBe(3 + 2 + 10);
});

describe('request size of a command (docs/kv.md, "KV: limits")', () => {
  it('counts a command in the path once: its arguments, as the JSON form counts them less the quoting', () => {
    const key = 'k'.repeat(520);
    const inPath = commandBytes(commandFromPath(`/set/${key}/v`, undefined, q('_token=t')));
    const asJson = Buffer.byteLength(JSON.stringify(['set', key, 'v']));
    expect(inPath).toBe(3 + 520 + 1);
    expect(inPath).toBeLessThan(asJson);
  });

  it('gives the same count for any command in the path and as JSON', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'grapheme', minLength: 1 }), { minLength: 1 }), (parts) => {
        const args = ['set', ...parts];
        const inPath = commandBytes(commandFromPath(`/${args.map(encodeURIComponent).join('/')}`, undefined, q()));
        expect(inPath).toBe(commandBytes(commandFromJson(JSON.parse(JSON.stringify(args)))));
        expect(inPath).toBeLessThanOrEqual(Buffer.byteLength(JSON.stringify(args)));
      }),
    );
  });
});
