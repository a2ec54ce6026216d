// Shared by the scripts of bench/vector: the cached vectors, the two request shapes, a keep-alive
// HTTP client.
//
// env: BENCH_DATA (the cache prefix embed.mjs wrote), GATEWAY_URL, GATEWAY_TOKEN, QDRANT_URL,
//      COLLECTION (the gateway's collection of the index)
import http from 'node:http';
import { readFileSync } from 'node:fs';

export const DIMENSION = 384;
export const TOP_K = 10;
export const DIRECT_COLLECTION = 'bench-direct';

/** {corpus: Float32Array[], queries: Float32Array[], sentences} from the embedding cache. */
export function loadData(prefix = process.env.BENCH_DATA) {
  const meta = JSON.parse(readFileSync(`${prefix}.json`, 'utf8'));
  const bytes = readFileSync(`${prefix}.bin`);
  const all = new Float32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
  const row = (i) => all.subarray(i * DIMENSION, (i + 1) * DIMENSION);
  const corpus = Array.from({ length: meta.corpus }, (_, i) => row(i));
  const queries = Array.from({ length: meta.queries }, (_, i) => row(meta.corpus + i));
  return { corpus, queries, sentences: meta.sentences, matrix: all.subarray(0, meta.corpus * DIMENSION) };
}

/** The namespace filter the gateway adds to every query of the default namespace. */
export const NAMESPACE_FILTER = { must: [{ key: 'ns', match: { value: '' } }] };

/** A query as a client of the gateway sends it, and the Qdrant request the gateway makes of it. */
export const queryRequest = {
  gateway: (vector) => ({ path: '/query', body: { vector: Array.from(vector), topK: TOP_K } }),
  direct: (vector, collection = process.env.COLLECTION) => ({
    path: `/collections/${collection}/points/query`,
    body: { query: Array.from(vector), filter: NAMESPACE_FILTER, limit: TOP_K, offset: 0, with_payload: ['id', 'seq'], with_vector: false },
  }),
};

/** Ids of a query answer, best first (the gateway's ids; for Qdrant, the payload id). */
export const answerIds = {
  gateway: (json) => json.result.map((hit) => String(hit.id)),
  direct: (json) => json.result.points.map((p) => String(p.payload?.id ?? p.id)),
};

/** A keep-alive client of one base URL, at most `sockets` connections. */
export function client(base, sockets, headers = {}) {
  const url = new URL(base);
  const agent = new http.Agent({ keepAlive: true, maxSockets: sockets });
  const request = (method, path, body) =>
    new Promise((resolve, reject) => {
      const payload = body === undefined ? undefined : typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
      const req = http.request(
        {
          agent,
          host: url.hostname,
          port: url.port,
          method,
          path,
          headers: { ...headers, ...(payload !== undefined ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(payload) } : {}) },
        },
        (res) => {
          const chunks = [];
          res.on('data', (c) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            if (res.statusCode !== 200) return reject(Object.assign(new Error(`HTTP ${res.statusCode}: ${text.slice(0, 200)}`), { status: res.statusCode }));
            resolve(text);
          });
          res.on('error', reject);
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  return {
    request,
    json: async (method, path, body) => JSON.parse(await request(method, path, body)),
    close: () => agent.destroy(),
  };
}

export const gatewayClient = (sockets) => client(process.env.GATEWAY_URL, sockets, { authorization: `Bearer ${process.env.GATEWAY_TOKEN}` });
export const qdrantClient = (sockets) => client(process.env.QDRANT_URL, sockets);
