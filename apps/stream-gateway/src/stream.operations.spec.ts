import { errorOf } from '@restash/shared/util-errors';
import { StreamError } from '@restash/stream/util-rest';
import { STREAM_NOT_FOUND, pathArgs, streamOperations } from './stream.operations';

/** What pathArgs throws: [status, message]. */
function thrown(run: () => unknown): [number, string] {
  const error = errorOf(run, StreamError);
  return [error.status, error.message];
}

const notFound = (path: string): [number, string] => [404, `Not found: ${path} is not an endpoint of the Stream API`];
/** pathArgs of a path `/<name>/<rest>` ('' rest with no slash: `/<name>`). */
const args = (name: string, segments: readonly [number, number] | undefined, rest: string, slash = true) =>
  pathArgs(name, segments, slash ? `/${name}/${rest}` : `/${name}`, rest);

describe('pathArgs', () => {
  it('takes no segments for an endpoint without any, at /<name> and /<name>/', () => {
    expect(args('topics', undefined, '', false)).toEqual([]);
    expect(args('topics', undefined, '')).toEqual([]);
  });

  it('reads each segment percent-decoded once, a trailing slash ending the path', () => {
    expect(args('committed', [2, 2], 'g/i')).toEqual(['g', 'i']);
    expect(args('committed', [2, 2], 'g/i/')).toEqual(['g', 'i']);
    expect(args('commit', [2, 2], 'a%20b/i%2Fj')).toEqual(['a b', 'i/j']);
    expect(args('offsets', [1, 1], '%2541')).toEqual(['%41']);
    expect(args('consume', [2, 3], 'g/i')).toEqual(['g', 'i']);
    expect(args('consume', [2, 3], 'g/i/orders')).toEqual(['g', 'i', 'orders']);
    expect(args('consume', [2, 3], 'g/i/orders/')).toEqual(['g', 'i', 'orders']);
  });

  it('answers the API’s 404 for too few or too many segments, or an empty one', () => {
    expect(thrown(() => args('committed', [2, 2], 'g'))).toEqual(notFound('/committed/g'));
    expect(thrown(() => args('committed', [2, 2], 'g/'))).toEqual(notFound('/committed/g/'));
    expect(thrown(() => args('commit', [2, 2], 'g/i/x/y'))).toEqual(notFound('/commit/g/i/x/y'));
    expect(thrown(() => args('commit', [2, 2], 'g/i//'))).toEqual(notFound('/commit/g/i//'));
    expect(thrown(() => args('delete-consumer', [2, 2], '/i'))).toEqual(notFound('/delete-consumer//i'));
    expect(thrown(() => args('offsets', [1, 1], ''))).toEqual(notFound('/offsets/'));
    expect(thrown(() => args('consume', [2, 3], 'g/i/orders/x'))).toEqual(notFound('/consume/g/i/orders/x'));
  });

  it('keeps a produced message whole: it may hold and end with /, and be empty; the topic may not be empty', () => {
    expect(args('produce', [0, Infinity], '', false)).toEqual([]);
    expect(args('produce', [0, Infinity], '')).toEqual([]);
    expect(args('produce', [0, Infinity], 'orders')).toEqual(['orders']);
    expect(args('produce', [0, Infinity], 'orders/')).toEqual(['orders']);
    expect(args('produce', [0, Infinity], 'orders/hello')).toEqual(['orders', 'hello']);
    expect(args('produce', [0, Infinity], 'orders/a/b/')).toEqual(['orders', 'a', 'b', '']);
    expect(args('produce', [0, Infinity], 'orders//')).toEqual(['orders', '', '']);
    expect(args('produce', [0, Infinity], 'orders/a%2Fb%20c')).toEqual(['orders', 'a/b c']);
    expect(thrown(() => args('produce', [0, Infinity], '/x'))).toEqual(notFound('/produce//x'));
    expect(thrown(() => args('produce', [0, Infinity], '/'))).toEqual(notFound('/produce//'));
  });

  it('answers 400 for a malformed escape in a segment', () => {
    expect(thrown(() => args('committed', [2, 2], '%zz/i'))).toEqual([400, 'Illegal argument: malformed path segment %zz']);
    expect(thrown(() => args('produce', [0, Infinity], 'orders/%ED%A0%80'))[0]).toBe(400);
  });

  it('answers the API’s 404 for an endpoint name sent percent-encoded, which Fastify decodes before routing', () => {
    expect(thrown(() => pathArgs('topics', undefined, '/%74opics', ''))).toEqual(notFound('/%74opics'));
    expect(thrown(() => pathArgs('commit', [2, 2], '/commi%74/g/i', 'g/i'))).toEqual(notFound('/commi%74/g/i'));
  });
});

describe('streamOperations', () => {
  it('declares each endpoint at its routes: /<name> and /<name>/ without segments, /<name>/* with', () => {
    const routes = Object.fromEntries(streamOperations({} as never).map((op) => [op.name, op.route]));
    expect(routes).toEqual({
      topics: ['/topics', '/topics/'],
      consumers: ['/consumers', '/consumers/'],
      committed: ['/committed/*'],
      offsets: ['/offsets/*'],
      produce: ['/produce', '/produce/*'],
      fetch: ['/fetch', '/fetch/'],
      consume: ['/consume/*'],
      commit: ['/commit/*'],
      'delete-consumer': ['/delete-consumer/*'],
      webhook: ['/webhook', '/webhook/'],
    });
  });

  it('names /<name>/ of the endpoints that need a segment as no endpoint, which their /<name>/* route would take', () => {
    expect(STREAM_NOT_FOUND).toEqual(['/committed/', '/offsets/', '/consume/', '/commit/', '/delete-consumer/']);
    for (const path of STREAM_NOT_FOUND) {
      const name = path.slice(1, -1);
      const op = streamOperations({} as never).find((o) => o.name === name);
      expect(op?.route).toEqual([`/${name}/*`]);
    }
  });

  it('takes the webhook’s credentials from Basic or the user and pass query parameters, and no other endpoint’s', () => {
    const operations = streamOperations({} as never);
    expect(operations.filter((op) => op.credentials).map((op) => [op.name, op.credentials])).toEqual([
      ['webhook', { scheme: 'basic', queryUser: 'user', queryPassword: 'pass' }],
    ]);
  });
});
