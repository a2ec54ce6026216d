import { errorOf } from '@restash/shared/util-errors';
import { VectorError } from '@restash/vector/util-query';
import { VECTOR_OPERATIONS, pathNamespace } from './vector.operations';

/** What pathNamespace throws: [status, message]. */
function thrown(run: () => unknown): [number, string] {
  const error = errorOf(run, VectorError);
  return [error.status, error.message];
}

describe('pathNamespace', () => {
  it('reads the namespace after /<name>/, percent-decoded once; none for /<name> and /<name>/', () => {
    expect(pathNamespace('upsert', true, '/upsert', '')).toBe('');
    expect(pathNamespace('upsert', true, '/upsert/', '')).toBe('');
    expect(pathNamespace('upsert', true, '/upsert/ns', 'ns')).toBe('ns');
    expect(pathNamespace('query', true, '/query/a%20b%2Fc', 'a%20b%2Fc')).toBe('a b/c');
    expect(pathNamespace('query', true, '/query/%2541', '%2541')).toBe('%41');
    expect(pathNamespace('fetch', true, '/fetch/a/b', 'a/b')).toBe('a/b');
    expect(pathNamespace('fetch', true, '/fetch//a', '/a')).toBe('/a');
    expect(pathNamespace('range', true, '/range/ü', 'ü')).toBe('ü');
  });

  it('answers 404 "takes no namespace" for a namespace on an operation that takes none, and accepts a trailing slash', () => {
    expect(pathNamespace('info', false, '/info', '')).toBe('');
    expect(pathNamespace('info', false, '/info/', '')).toBe('');
    expect(thrown(() => pathNamespace('info', false, '/info/x', 'x'))).toEqual([404, 'Not found: info takes no namespace']);
    expect(thrown(() => pathNamespace('list-namespaces', false, '/list-namespaces/%20', '%20'))).toEqual([404, 'Not found: list-namespaces takes no namespace']);
  });

  it('refuses a namespace that is badly encoded, holds NUL or a lone surrogate with 400, before "takes no namespace"', () => {
    expect(thrown(() => pathNamespace('upsert', true, '/upsert/%zz', '%zz'))).toEqual([400, 'Invalid namespace in the path: %zz']);
    expect(thrown(() => pathNamespace('info', false, '/info/%zz', '%zz'))).toEqual([400, 'Invalid namespace in the path: %zz']);
    expect(thrown(() => pathNamespace('upsert', true, '/upsert/a%00b', 'a%00b'))[0]).toBe(400);
    expect(thrown(() => pathNamespace('upsert', true, '/upsert/%ED%A0%80', '%ED%A0%80'))[0]).toBe(400);
  });

  it('answers the API’s 404 for an operation name sent percent-encoded, which Fastify decodes before routing', () => {
    expect(thrown(() => pathNamespace('upsert', true, '/%75psert', ''))).toEqual([404, 'Not found: /%75psert is not an endpoint of the Vector API']);
    expect(thrown(() => pathNamespace('upsert', true, '/upser%74/ns', 'ns'))).toEqual([404, 'Not found: /upser%74/ns is not an endpoint of the Vector API']);
  });
});

describe('VECTOR_OPERATIONS', () => {
  it('declares each operation at /<name> and /<name>/*, a route of its own', () => {
    const operations = VECTOR_OPERATIONS.map((op) => op({} as never));
    for (const op of operations) expect(op.route).toEqual([`/${op.name}`, `/${op.name}/*`]);
    expect(new Set(operations.map((op) => op.name)).size).toBe(operations.length);
  });
});
