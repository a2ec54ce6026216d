// Where a process's CPU went, from a V8 CPU profile (`node --cpu-prof`, e.g. BENCH_GATEWAY_NODE_OPTIONS of
// bench/kv, bench/vector, bench/queue): a benchmark's profile spans the whole stack's life (start-up,
// warm-up, rounds, idle gaps), so this summarises a window of it, counting only the samples that were
// not idle.
//
//   node bench/lib/cpuprofile.mjs F.cpuprofile                 busy share of each 10-s bucket (BUCKET_S), to
//                                                              pick a window
//   node bench/lib/cpuprofile.mjs F.cpuprofile FROM_S TO_S [N] the window [FROM_S, TO_S) seconds after the
//                                                              profile's start: busy ms, the N (25) functions
//                                                              with the most self time, and inclusive time per
//                                                              package (node_modules/<package>, or
//                                                              dist:<dir>/<file> for our own built code, or
//                                                              the builtin's name), as shares of busy time
//
// A sample is one stack seen by the profiler; its weight is its time delta. Self time goes to the sample's
// top frame; inclusive time goes once to every package on the sample's stack.
import { readFileSync } from 'node:fs';

const [file, fromArg, toArg, topArg] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: node bench/lib/cpuprofile.mjs F.cpuprofile [FROM_S TO_S [N]]\n');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, 'utf8'));
const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
const parents = new Map();
for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);

/** The package a frame belongs to: node_modules/<package>, dist:<dir>/<file>, else its URL or function name. */
function packageOf(frame) {
  const url = frame.url ?? '';
  const module = /node_modules\/((@[^/]+\/)?[^/]+)/.exec(url);
  if (module) return module[1];
  if (url.includes('/dist/')) return `dist:${url.split('/dist/').pop().split('/').slice(-2).join('/')}`;
  return url || frame.functionName || '(program)';
}

/** A function's label: name, the last two parts of its file, its line (1-based). */
const label = (frame) => `${frame.functionName || '(anonymous)'} ${(frame.url ?? '').split('/').slice(-2).join('/')}:${frame.lineNumber + 1}`;

const buckets = new Map(); // 10-s bucket -> [busy µs, total µs]
const self = new Map();
const inclusive = new Map();
const bucketS = Number(process.env.BUCKET_S ?? 10);
const from = Number(fromArg ?? 0);
const to = Number(toArg ?? Infinity);
let busy = 0;
let time = profile.startTime;
for (let i = 0; i < profile.samples.length; i++) {
  const delta = profile.timeDeltas[i] ?? 0;
  time += delta;
  const second = (time - profile.startTime) / 1e6;
  const node = nodes.get(profile.samples[i]);
  const idle = node.callFrame.functionName === '(idle)';
  const bucket = Math.floor(second / bucketS) * bucketS;
  const sums = buckets.get(bucket) ?? [0, 0];
  sums[0] += idle ? 0 : delta;
  sums[1] += delta;
  buckets.set(bucket, sums);
  if (idle || second < from || second >= to) continue;
  busy += delta;
  const own = label(node.callFrame);
  self.set(own, (self.get(own) ?? 0) + delta);
  const seen = new Set();
  for (let id = profile.samples[i]; id !== undefined; id = parents.get(id)) {
    const name = packageOf(nodes.get(id).callFrame);
    if (seen.has(name)) continue;
    seen.add(name);
    inclusive.set(name, (inclusive.get(name) ?? 0) + delta);
  }
}

if (fromArg === undefined) {
  process.stdout.write(`${[...buckets].map(([b, [on, all]]) => `${b}s ${Math.round((on / all) * 100)}%`).join('  ')}\n`);
  process.exit(0);
}
const share = (µs) => `${((µs / busy) * 100).toFixed(1).padStart(5)}%`;
const top = (map, n) => [...map].sort((a, b) => b[1] - a[1]).slice(0, n);
process.stdout.write(`busy ${(busy / 1000).toFixed(0)} ms in [${from}, ${to}) s\n\nself time, top ${Number(topArg ?? 25)}:\n`);
for (const [name, µs] of top(self, Number(topArg ?? 25))) process.stdout.write(`${share(µs)}  ${name}\n`);
process.stdout.write('\ninclusive, per package:\n');
for (const [name, µs] of top(inclusive, 40)) process.stdout.write(`${share(µs)}  ${name}\n`);
