import type { z } from 'zod';

/** One variable of an environment schema, as its documentation table shows it. */
export interface EnvVariableDoc {
  name: string;
  /** `(required)`, `(none)` for an optional variable without a default, `(empty)`, else the default (strings in backticks). */
  fallback: string;
  description: string;
}

/** What the schema cannot say about a variable: its description, or a default the loader supplies. */
export interface EnvDocOptions {
  /**
   * Descriptions by variable name, for fields whose schema carries none (`.describe()` wins when it does). Markdown,
   * one line. Names the schema does not have are ignored, so that services can share one map.
   */
  descriptions?: Readonly<Record<string, string>>;
  /** Defaults the schema does not hold (given by the loader, or depending on the machine), as they are to be shown. */
  fallbacks?: Readonly<Record<string, string>>;
}

interface Node {
  description?: string;
  _zod: { def: { type: string; in?: Node; innerType?: Node; defaultValue?: unknown } };
}

/** The variables object of an env schema: a zod object, or an object piped into a `.transform()`. */
function variablesOf(schema: z.ZodType): Record<string, Node> {
  let node = schema as unknown as Node & { shape?: Record<string, Node> };
  while (node._zod.def.type === 'pipe' && node._zod.def.in) node = node._zod.def.in as typeof node;
  if (node._zod.def.type !== 'object' || !node.shape) throw new Error('an env schema is a zod object, possibly piped into a transform');
  return node.shape;
}

/** The field's description: its own `.describe()`, or that of what it wraps (a default inside a transform). */
function describedAs(node: Node | undefined): string | undefined {
  for (let n = node; n; n = n._zod.def.in ?? n._zod.def.innerType) if (n.description) return n.description;
  return undefined;
}

/** `(required)`, `(none)`, `(empty)` or the default value of a field, from the outermost `.default()` or `.optional()`. */
function fallbackOf(node: Node): string {
  for (let n: Node | undefined = node; n; n = n._zod.def.in ?? n._zod.def.innerType) {
    const { type, defaultValue } = n._zod.def;
    if (type === 'optional') return '(none)';
    if (type === 'default') {
      if (defaultValue === '') return '(empty)';
      return typeof defaultValue === 'string' ? `\`${defaultValue}\`` : String(defaultValue);
    }
  }
  return '(required)';
}

/**
 * Every variable of an env schema in declaration order, with its default and description.
 * @throws Error naming the variables that have no description (neither `.describe()` nor `options.descriptions`), or
 *   fallbacks of variables the schema does not have
 */
export function envVariables(schema: z.ZodType, options: EnvDocOptions = {}): EnvVariableDoc[] {
  const fields = variablesOf(schema);
  const unknown = Object.keys(options.fallbacks ?? {}).filter((name) => !(name in fields));
  if (unknown.length > 0) throw new Error(`not variables of the schema: ${unknown.join(', ')}`);
  const docs = Object.entries(fields).map(([name, node]) => ({
    name,
    fallback: options.fallbacks?.[name] ?? fallbackOf(node),
    description: describedAs(node) ?? options.descriptions?.[name] ?? '',
  }));
  const missing = docs.filter((d) => d.description === '').map((d) => d.name);
  if (missing.length > 0) throw new Error(`variables without a description: ${missing.join(', ')}`);
  return docs;
}

/** A markdown table of variables: `| variable | default | meaning |`. */
export function envTable(variables: readonly EnvVariableDoc[]): string {
  const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
  return ['| variable | default | meaning |', '|---|---|---|', ...variables.map((v) => `| \`${v.name}\` | ${cell(v.fallback)} | ${cell(v.description)} |`)].join('\n');
}

/** The markers around a generated section of a document: `<!-- <name>:start -->` and `<!-- <name>:end -->`. */
export function sectionMarkers(name: string): { start: string; end: string } {
  return { start: `<!-- ${name}:start -->`, end: `<!-- ${name}:end -->` };
}

/**
 * `text` with what stands between the markers of `name` replaced by `body` (one blank line on each side).
 * @throws Error when the markers are missing or out of order
 */
export function replaceSection(text: string, name: string, body: string): string {
  const { start, end } = sectionMarkers(name);
  const from = text.indexOf(start);
  const to = text.indexOf(end);
  if (from < 0 || to < from) throw new Error(`no ${start} … ${end} section`);
  return `${text.slice(0, from + start.length)}\n\n${body}\n\n${text.slice(to)}`;
}
