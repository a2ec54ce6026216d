// The README's values table, from values.yaml's `## @section` and `## @param <path> <description>` lines.
// Regenerate it with:
//   SWC_NODE_PROJECT=tsconfig.base.json node -r @swc-node/register charts/restash/tests/values-doc.ts --write
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

/** Where the generated table sits in charts/restash/README.md. */
export const README_BEGIN = '<!-- values table: generated from values.yaml by tests/values-doc.ts -->';
export const README_END = '<!-- end of values table -->';

/** One `@param` line: its section, the value's dotted path and its description. */
export interface DocumentedValue {
  section: string;
  path: string;
  description: string;
}

/** The `@param` lines of a values.yaml text, in order, each with the `@section` above it. */
export function documentedValues(text: string): DocumentedValue[] {
  let section = '';
  const out: DocumentedValue[] = [];
  for (const line of text.split('\n')) {
    const sectionMatch = /^\s*## @section (.+)$/.exec(line);
    if (sectionMatch?.[1]) section = sectionMatch[1].trim();
    const param = /^\s*## @param (\S+) (.+)$/.exec(line);
    if (param?.[1] && param[2]) out.push({ section, path: param[1], description: param[2].trim() });
  }
  return out;
}

/** The default at `path` as the table shows it (JSON; strings quoted). */
function shown(values: unknown, path: string): string {
  const value = path.split('.').reduce<unknown>((node, key) => (node && typeof node === 'object' ? (node as Record<string, unknown>)[key] : undefined), values);
  const text = JSON.stringify(value ?? null);
  return text.length > 60 ? '(see values.yaml)' : `\`${text.replace(/\|/g, '\\|')}\``;
}

/** The Markdown tables (one per section) of a values.yaml text. */
export function valuesTable(text: string): string {
  const values = parse(text) as unknown;
  const sections: string[] = [];
  let current = '';
  for (const { section, path, description } of documentedValues(text)) {
    if (section !== current) {
      current = section;
      sections.push(`\n### ${section}\n\n| Name | Description | Default |\n|---|---|---|`);
    }
    sections.push(`| \`${path}\` | ${description.replace(/\|/g, '\\|')} | ${shown(values, path)} |`);
  }
  return sections.join('\n').trim();
}

if (require.main === module && process.argv.includes('--write')) {
  const dir = join(__dirname, '..');
  const readmePath = join(dir, 'README.md');
  const readme = readFileSync(readmePath, 'utf8');
  const begin = readme.indexOf(README_BEGIN);
  const end = readme.indexOf(README_END);
  if (begin < 0 || end < begin) throw new Error(`README.md needs the markers ${README_BEGIN} and ${README_END}`);
  const table = valuesTable(readFileSync(join(dir, 'values.yaml'), 'utf8'));
  writeFileSync(readmePath, `${readme.slice(0, begin + README_BEGIN.length)}\n\n${table}\n\n${readme.slice(end)}`);
  process.stdout.write('charts/restash/README.md: values table written\n');
}
