import { Redis } from '@upstash/redis';
import { type KvStack, startKvStack } from './testing/kv-stack';

describe('probe', () => {
  let stack: KvStack;
  let redis: Redis;
  beforeAll(async () => {
    stack = await startKvStack({ acme: [{ name: 'main' }] });
    redis = new Redis({ url: stack.url, token: stack.tokens('acme', 'main').standard, enableTelemetry: false, automaticDeserialization: false });
  });
  afterAll(() => stack.stop());
  const run = async (...cmd: (string | number)[]) => {
    const r = await fetch(stack.url, { method: 'POST', headers: { authorization: `Bearer ${stack.tokens('acme', 'main').standard}` }, body: JSON.stringify(cmd) });
    return `${r.status} ${await r.text()}`;
  };
  it('probes', async () => {
    const out: string[] = [];
    const r = new Redis({ url: stack.url, token: stack.tokens('acme', 'main').standard, enableTelemetry: false });
    const j = (p: Promise<unknown>) => p.then((v) => JSON.stringify(v), (e) => `ERR ${e}`);
    out.push(await j(r.json.set('k1', '$', { a: 'foo', nested: { a: 'hello' }, nested2: { a: 31 } })));
    out.push(await j(r.json.strlen('k1', '$..a')));
    out.push(await j(r.json.set('k2', '$', { name: 'W', connection: { wireless: true, type: 'B' }, price: 64.99, stock: 17, colors: ['black', 'white'] })));
    out.push(await j(r.json.resp('k2')));
    out.push(await j(r.json.resp('k2', '$')));
    out.push(await j(r.json.set('m1', '$', { a: 1, b: 2, nested: { a: 3 }, c: null })));
    out.push(await j(r.json.set('m2', '$', { a: 4, b: 5, nested: { a: 6 }, c: null })));
    out.push(await j(r.json.mget(['m1', 'm2'], '$..a')));
    out.push(await j(r.json.get('m1', '$..a')));
    for (let i = 0; i < 50; i++) await r.xadd('st', '*', { f: i });
    out.push(await j(r.xtrim('st', { strategy: 'MAXLEN', exactness: '~', threshold: 30 })));
    out.push(await j(r.xlen('st')));
    require('node:fs').writeFileSync('/tmp/probe.out', out.join('\n'));
  });
});
