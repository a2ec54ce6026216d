// Embeds the sentences of corpus.mjs with embedder-local, once: the vectors are cached by the hash of
// the sentence selection, so a re-run with the same node_modules/ skips this step. Sentences are sent
// in batches of similar length (less padding), each vector stored at its sentence's row.
//
//   node bench/vector/embed.mjs CORPUS.json CACHE_PREFIX
//
// Writes CACHE_PREFIX.bin (Float32, little-endian, (corpus + queries) x 384, corpus rows first) and
// CACHE_PREFIX.json ({hash, model, dimension, corpus: n, queries: n, sentences: [...]}).
// env: EMBEDDER_URL (http://127.0.0.1:PORT/v1), BENCH_EMBED_BATCH (64), BENCH_EMBED_CONCURRENCY (2)
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const MODEL = 'all-minilm-l6-v2';
const DIMENSION = 384;
const [input, prefix] = process.argv.slice(2);
const { hash, corpus, queries } = JSON.parse(readFileSync(input, 'utf8'));
const sentences = [...corpus, ...queries];
const batch = Number(process.env.BENCH_EMBED_BATCH ?? 64);
const concurrency = Number(process.env.BENCH_EMBED_CONCURRENCY ?? 2);

// Batches of similar length: the model pads a batch to its longest sentence.
const order = sentences.map((s, i) => i).sort((a, b) => sentences[a].length - sentences[b].length || a - b);
const out = new Float32Array(sentences.length * DIMENSION);
const started = performance.now();
let next = 0;
let done = 0;
let lastReport = started;
const worker = async () => {
  for (;;) {
    const from = next;
    if (from >= sentences.length) return;
    next += batch;
    const rows = order.slice(from, from + batch);
    const texts = rows.map((i) => sentences[i]);
    const response = await fetch(`${process.env.EMBEDDER_URL}/embeddings`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: MODEL, input: texts }),
    });
    if (!response.ok) throw new Error(`embedder answered ${response.status}: ${await response.text()}`);
    const { data } = await response.json();
    for (const { index, embedding } of data) {
      if (embedding.length !== DIMENSION) throw new Error(`embedding of ${embedding.length} dimensions`);
      out.set(embedding, rows[index] * DIMENSION);
    }
    done += texts.length;
    if (performance.now() - lastReport > 15_000) {
      lastReport = performance.now();
      process.stderr.write(`  embedded ${done}/${sentences.length}\n`);
    }
  }
};
await Promise.all(Array.from({ length: concurrency }, worker));
const seconds = (performance.now() - started) / 1000;

mkdirSync(path.dirname(prefix), { recursive: true });
writeFileSync(`${prefix}.bin.tmp`, new Uint8Array(out.buffer));
writeFileSync(`${prefix}.json.tmp`, JSON.stringify({ hash, model: MODEL, dimension: DIMENSION, corpus: corpus.length, queries: queries.length, sentences }));
renameSync(`${prefix}.json.tmp`, `${prefix}.json`);
renameSync(`${prefix}.bin.tmp`, `${prefix}.bin`); // last: its presence means the cache is complete
process.stderr.write(
  `embedded ${sentences.length} sentences in ${seconds.toFixed(1)} s (${Math.round(sentences.length / seconds)} sentences/s), cached in ${prefix}.bin\n`,
);
process.stdout.write(`${JSON.stringify({ kind: 'embed', sentences: sentences.length, seconds })}\n`);
