// Shared by the report.mjs of every benchmark: reading the records the harness wrote (bench/lib/
// harness.ts), medians, number formats, the CPU per request columns, and the README section between a
// bench's markers.
import { readFileSync, writeFileSync } from 'node:fs';
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

/**
 * Replaces README's section between `<!-- bench-<name>:start -->` and `<!-- bench-<name>:end -->` with
 * `body`; leaves README alone, with a warning, when it lacks the markers.
 */
export function writeReadmeSection(readme, name, body) {
  const START = `<!-- bench-${name}:start -->`;
  const END = `<!-- bench-${name}:end -->`;
  const text = readFileSync(readme, 'utf8');
  if (!text.includes(START) || !text.includes(END) || text.indexOf(START) > text.indexOf(END)) {
    process.stderr.write(`\nwarning: ${readme} has no ${START} … ${END} section; left untouched\n`);
    return;
  }
  writeFileSync(readme, `${text.slice(0, text.indexOf(START))}${START}\n${body}\n${END}${text.slice(text.indexOf(END) + END.length)}`);
}
