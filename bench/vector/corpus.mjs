// The text of bench/vector/run.sh: real English sentences already on this machine, chosen
// deterministically, written as JSON {hash, corpus: [20,000 strings], queries: [1,000 strings]}.
//
//   node bench/vector/corpus.mjs OUT.json
//
// Source: the prose of every *.md file under node_modules/ (READMEs, changelogs, docs of the npm
// packages in package-lock.json): fenced and indented code, HTML, tables, link targets, URLs and
// markdown markup are stripped, the rest is split at sentence ends, and sentences of 6 to 40 words
// that look like prose (mostly letters) are kept. If that gives fewer than CORPUS + QUERIES, Python
// stdlib docstrings (the venv's python, pydoc over every stdlib module) are added the same way.
// Duplicates (case-insensitive) are dropped, the rest is ordered by a stable hash (sha1 of the text)
// and cut: the first CORPUS sentences are the corpus, the next QUERIES the held-out queries.
// `hash` names the selection (it keys the embedding cache).
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync, lstatSync } from 'node:fs';
import path from 'node:path';

const CORPUS = Number(process.env.BENCH_VECTORS ?? 20_000);
const QUERIES = Number(process.env.BENCH_QUERIES ?? 1_000);
const [output] = process.argv.slice(2);

function* markdownFiles(dir) {
  let entries;
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    const p = path.join(dir, e.name);
    if (e.isDirectory() && !lstatSync(p).isSymbolicLink()) yield* markdownFiles(p);
    else if (e.isFile() && /\.md$/i.test(e.name)) yield p;
  }
}

function prose(markdown) {
  return markdown
    .replace(/\r/g, '')
    .replace(/^(```|~~~)[^\n]*\n[\s\S]*?\n\1[^\n]*$/gm, '\n') // fenced code
    .replace(/<!--[\s\S]*?-->/g, ' ')
    .replace(/^(?: {4}|\t).*$/gm, '') // indented code
    .replace(/^\s*\|.*$/gm, '') // tables
    .replace(/^\s*#{1,6}\s.*$/gm, '\n') // headings: not sentences
    .replace(/<[^>\n]+>/g, ' ') // HTML tags
    .replace(/!\[[^\]]*\]\([^)]*\)/g, ' ') // images
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1') // links: keep the text
    .replace(/\[([^\]]*)\]\[[^\]]*\]/g, '$1')
    .replace(/^\s*\[[^\]]+\]:.*$/gm, '') // link definitions
    .replace(/\bhttps?:\/\/\S+/g, ' ')
    .replace(/`[^`\n]*`/g, ' ') // inline code: usually identifiers, not words
    .replace(/^\s*(?:[-*+]|\d+\.)\s+/gm, '\n') // list items start a sentence
    .replace(/^\s*>\s?/gm, '')
    .replace(/[*_]{1,3}([^*_\n]+)[*_]{1,3}/g, '$1');
}

function sentences(text) {
  const out = [];
  for (const paragraph of text.split(/\n\s*\n|\n(?=\s*\n)/)) {
    const flat = paragraph.replace(/\s+/g, ' ').trim();
    for (const s of flat.split(/(?<=[.!?])\s+(?=[A-Z"'(])/)) {
      const sentence = s.trim();
      const words = sentence.split(' ');
      if (words.length < 6 || words.length > 40) continue;
      if (!/^[A-Z]/.test(sentence) || !/[.!?]$/.test(sentence)) continue;
      const letters = sentence.replace(/[^A-Za-z ]/g, '').length;
      if (letters < 0.85 * sentence.length) continue; // code, versions, paths
      if (/[{};=]|=>|\(\)|\\/.test(sentence)) continue;
      out.push(sentence);
    }
  }
  return out;
}

const seen = new Map(); // lower-case text -> text
const add = (list) => {
  for (const s of list) if (!seen.has(s.toLowerCase())) seen.set(s.toLowerCase(), s);
};
let files = 0;
for (const file of markdownFiles('node_modules')) {
  files++;
  add(sentences(prose(readFileSync(file, 'utf8'))));
}
const fromMarkdown = seen.size;
if (seen.size < CORPUS + QUERIES) {
  const python = ['.cache/python/venv/bin/python', 'python3'].find((p) => spawnSync(p, ['-c', '0']).status === 0);
  const script = `
import sys, pkgutil, importlib, inspect, json, warnings, io, contextlib
warnings.simplefilter("ignore")
docs = []
skip = ("antigravity", "this", "idlelib", "turtledemo", "tkinter", "turtle", "test", "lib2to3", "ensurepip", "venv", "pydoc_data")
names = []
for top in sorted(set(sys.stdlib_module_names)):
    if top.startswith("_") or top in skip:
        continue
    names.append(top)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            mod = importlib.import_module(top)
        if hasattr(mod, "__path__"):
            names += sorted(m.name for m in pkgutil.walk_packages(mod.__path__, top + ".", onerror=lambda _: None) if "._" not in m.name and ".test" not in m.name)
    except BaseException:
        pass
for name in names:
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            mod = importlib.import_module(name)
    except BaseException:
        continue
    seen = set()
    for obj in [mod] + [v for _, v in sorted(vars(mod).items()) if inspect.isclass(v) or inspect.isroutine(v)]:
        for o in [obj] + ([v for _, v in sorted(vars(obj).items()) if inspect.isroutine(v)] if inspect.isclass(obj) else []):
            d = inspect.getdoc(o)
            if d and id(d) not in seen:
                seen.add(id(d))
                docs.append(d)
json.dump(docs, sys.stdout)
`;
  const { stdout, status } = spawnSync(python, ['-c', script], { encoding: 'utf8', maxBuffer: 1 << 28 });
  if (status === 0) for (const doc of JSON.parse(stdout)) add(sentences(doc));
}

const sha1 = (s) => createHash('sha1').update(s).digest('hex');
const all = [...seen.values()].map((s) => [sha1(s), s]).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)).map(([, s]) => s);
if (all.length < CORPUS + QUERIES) {
  console.error(`only ${all.length} sentences found, ${CORPUS + QUERIES} needed`);
  process.exit(1);
}
const corpus = all.slice(0, CORPUS);
const queries = all.slice(CORPUS, CORPUS + QUERIES);
const hash = sha1(JSON.stringify([corpus, queries])).slice(0, 12);
writeFileSync(output, JSON.stringify({ hash, corpus, queries }));
console.error(
  `corpus: ${all.length} distinct sentences (${fromMarkdown} from ${files} markdown files under node_modules/` +
    `${all.length > fromMarkdown ? `, ${all.length - fromMarkdown} from Python stdlib docstrings` : ''}); ` +
    `${corpus.length} vectors + ${queries.length} queries, selection ${hash}`,
);
