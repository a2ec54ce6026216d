// Shared by the report.mjs of every benchmark: reading the records the harness wrote (bench/lib/
// harness.ts), medians, number formats, the CPU per request columns, the section of docs/benchmarks.md
// between a bench's markers, and the history of its ratios (bench/<name>/history*.tsv) with its chart.
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';

/** The JSON records of a results.jsonl file. */
export function readRecords(file) {
  return readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map((line) => JSON.parse(line));
}

/** The median of the numbers among `values` (NaN when there are none). */
export function median(values) {
  const s = values.filter((v) => typeof v === 'number' && !Number.isNaN(v)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/** Error counts summed over runs, `{message: count}`. */
export function sumErrors(runs) {
  const errors = {};
  for (const r of runs) for (const [message, count] of Object.entries(r.errors ?? {})) errors[message] = (errors[message] ?? 0) + count;
  return errors;
}

/**
 * Medians of the CPU time per request the harness measured around each run, µs: `gateway` (the
 * services under test), `engine`, and each measured process by name.
 */
export function cpuMedians(runs) {
  const names = new Set(runs.flatMap((r) => Object.keys(r.cpu?.processesUs ?? {})));
  return {
    gateway: median(runs.map((r) => r.cpu?.gatewayUs)),
    engine: median(runs.map((r) => r.cpu?.engineUs)),
    processes: Object.fromEntries([...names].map((name) => [name, median(runs.map((r) => r.cpu?.processesUs?.[name]))])),
  };
}

export const int = (n) => (Number.isNaN(n) ? 'n/a' : Math.round(n).toLocaleString('en-US'));
export const ms = (n) => (Number.isNaN(n) ? 'n/a' : n.toFixed(2));
/** CPU µs, to 3 significant digits. */
export const us = (n) => (Number.isNaN(n) ? 'n/a' : n >= 100 ? Math.round(n).toString() : n.toPrecision(3));
export const errorText = (errors) => Object.entries(errors).map(([message, count]) => `${count}× ${message}`).join('; ') || '0';

/** "this machine" for a report header: nproc and CPU model. */
export function machine() {
  return `nproc ${os.cpus().length}, ${os.cpus()[0]?.model ?? 'unknown CPU'}`;
}

/** The CPU-time method, one line for a report's header. */
export const CPU_METHOD =
  "CPU per request: the process's own accounting (/proc/<pid>/stat utime + stime of the gateway and engines, INFO used_cpu_user + used_cpu_sys of a Redis engine) just before and after each run, over the requests of the run; median of the rounds";

/** Wraps `text` at `width` columns, at spaces. */
export function wrap(text, width = 100) {
  return text
    .split(' ')
    .reduce((lines, word) => {
      const last = lines[lines.length - 1];
      if (last && last.length + 1 + word.length <= width) lines[lines.length - 1] = `${last} ${word}`;
      else lines.push(word);
      return lines;
    }, [])
    .join('\n');
}

/** `text` with the part between `<!-- <marker>:start -->` and `<!-- <marker>:end -->` replaced by `body`; undefined without the markers. */
export function replaceMarked(text, marker, body) {
  const START = `<!-- ${marker}:start -->`;
  const END = `<!-- ${marker}:end -->`;
  const from = text.indexOf(START);
  const to = text.indexOf(END);
  if (from < 0 || to < from) return undefined;
  return `${text.slice(0, from)}${START}\n${body}\n${END}${text.slice(to + END.length)}`;
}

/**
 * Replaces the section of `docs` (docs/benchmarks.md) between `<!-- bench-<name>:start -->` and
 * `<!-- bench-<name>:end -->` with `body`; leaves the file alone, with a warning, when it lacks the markers.
 */
export function writeDocsSection(docs, name, body) {
  const text = replaceMarked(readFileSync(docs, 'utf8'), `bench-${name}`, body);
  if (text === undefined) {
    process.stderr.write(`\nwarning: ${docs} has no <!-- bench-${name}:start --> … <!-- bench-${name}:end --> section; left untouched\n`);
    return;
  }
  writeFileSync(docs, text);
}

const HISTORY_HEADER = 'date\tseries\tratio';

/** The rows of a history file (`date`, `series`, `ratio` separated by tabs, a header first): `{date, series, ratio}`; [] when absent. */
export function readHistory(file) {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .slice(1)
    .filter(Boolean)
    .map((line) => {
      const [date, series, ratio] = line.split('\t');
      return { date, series, ratio: Number(ratio) };
    });
}

/** Appends one run's ratios (`[{series, ratio}]`, NaN ones left out) to a history file, under `date` (ISO). */
export function appendHistory(file, date, ratios) {
  const lines = ratios.filter((r) => Number.isFinite(r.ratio)).map((r) => `${date}\t${r.series}\t${r.ratio.toFixed(3)}\n`);
  if (!existsSync(file)) appendFileSync(file, `${HISTORY_HEADER}\n`);
  appendFileSync(file, lines.join(''));
}

/** The lines' colours, in order: Mermaid's xychart has no legend, so the text under a chart names them. */
export const CHART_COLOURS = [
  ['blue', '#1f77b4'],
  ['orange', '#ff7f0e'],
  ['green', '#2ca02c'],
  ['red', '#d62728'],
  ['purple', '#9467bd'],
  ['brown', '#8c564b'],
];

/**
 * A Mermaid `xychart-beta` line chart of a history (readHistory's rows): one line per series of the latest run, over
 * the last `runs` runs that have every one of them (a run is a distinct date), x labels `MM-DD HH:MM` (UTC), then a
 * line naming each series with its colour and, from `targets` ({series: number}), its target. '' for no history.
 */
export function ratioChart(title, rows, { targets = {}, runs = 20 } = {}) {
  const byDate = new Map();
  for (const row of rows) {
    if (!byDate.has(row.date)) byDate.set(row.date, new Map());
    byDate.get(row.date).set(row.series, row.ratio);
  }
  const dates = [...byDate.keys()].sort();
  if (dates.length === 0) return '';
  const series = [...byDate.get(dates[dates.length - 1]).keys()].slice(0, CHART_COLOURS.length);
  const shown = dates.filter((d) => series.every((s) => byDate.get(d).has(s))).slice(-runs);
  const values = shown.flatMap((d) => series.map((s) => byDate.get(d).get(s)));
  const top = Math.max(1, Math.ceil(Math.max(...values) * 10) / 10);
  const label = (d) => `"${d.slice(5, 10)} ${d.slice(11, 16)}"`.replace(/ "$/, '"');
  const chart = [
    '```mermaid',
    '---',
    'config:',
    '  themeVariables:',
    '    xyChart:',
    `      plotColorPalette: "${CHART_COLOURS.slice(0, series.length).map(([, hex]) => hex).join(', ')}"`,
    '---',
    'xychart-beta',
    `  title "${title.replace(/"/g, "'")}"`,
    `  x-axis [${shown.map(label).join(', ')}]`,
    `  y-axis "ratio" 0 --> ${top}`,
    ...series.map((s) => `  line [${shown.map((d) => byDate.get(d).get(s)).join(', ')}]`),
    '```',
  ];
  const legend = series.map((s, i) => `${CHART_COLOURS[i][0]}: ${s}${targets[s] === undefined ? '' : ` (target ≥ ${targets[s]})`}`);
  return `${chart.join('\n')}\n\n${shown.length} runs; ${legend.join('; ')}.`;
}

/**
 * After a published run: appends its ratios to `history` (bench/<name>/history*.tsv) and writes the chart of them into
 * `docs` between `<!-- bench-<marker>-chart:start -->` and `<!-- bench-<marker>-chart:end -->`.
 * @param ratios `[{series, ratio, target?}]`
 */
export function recordRatios(docs, marker, history, title, date, ratios) {
  appendHistory(history, date, ratios);
  const targets = Object.fromEntries(ratios.filter((r) => r.target !== undefined).map((r) => [r.series, r.target]));
  writeDocsSection(docs, `${marker}-chart`, ratioChart(title, readHistory(history), { targets }));
}
