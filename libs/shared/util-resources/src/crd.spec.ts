import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { crdFileName, crdFileText, crdOf, type SchemaNode, structuralSchema } from './crd';
import { CRD_KINDS, KINDS, KV_BACKUP_KIND, withRule } from './kinds';
import { z } from 'zod';

const crdsDir = join(__dirname, '../../../../deploy/crds');

/** Every node of a schema, with its path. */
function nodes(node: SchemaNode, path = ''): Array<[string, SchemaNode]> {
  const children = Object.entries((node.properties ?? {}) as Record<string, SchemaNode>).flatMap(([k, v]) => nodes(v, `${path}.${k}`));
  const items = node.items ? nodes(node.items as SchemaNode, `${path}[*]`) : [];
  return [[path, node], ...children, ...items];
}

/** A default value and the schema nodes it reaches: [path, value, node] for the node and every property the value has. */
function defaultsBelow(path: string, value: unknown, node: SchemaNode): Array<[string, unknown, SchemaNode]> {
  const found: Array<[string, unknown, SchemaNode]> = [[path, value, node]];
  if (typeof value !== 'object' || value === null || !node.properties) return found;
  for (const [key, child] of Object.entries(value)) {
    const schema = (node.properties as Record<string, SchemaNode>)[key];
    if (schema) found.push(...defaultsBelow(`${path}.${key}`, child, schema));
  }
  return found;
}

describe('crdOf', () => {
  const kinds = CRD_KINDS.map((info) => [info.kind, info] as const);

  it.each(kinds)('%s: the committed deploy/crds file is the generated one (run make crds)', (_kind, info) => {
    expect(readFileSync(join(crdsDir, crdFileName(info)), 'utf8')).toBe(crdFileText(info));
  });

  it.each(kinds)('%s: a structural schema (typed nodes, no additionalProperties, list-map keys required)', (_kind, info) => {
    const schema = crdOf(info).spec.versions[0].schema.openAPIV3Schema;
    for (const [path, node] of nodes(schema)) {
      expect([path, typeof node.type]).toEqual([path, 'string']);
      expect([path, 'additionalProperties' in node]).toEqual([path, false]);
      if (node.type === 'object' && node.default) {
        // The API server runs the rules on a default as written (no nested defaulting): below every default, an object
        // with rules must have each of its defaulted fields spelled out.
        for (const [at, value, schema] of defaultsBelow(path, node.default, node)) {
          if (!schema['x-kubernetes-validations'] || typeof value !== 'object' || value === null) continue;
          const defaulted = Object.entries((schema.properties ?? {}) as Record<string, SchemaNode>).filter(([, p]) => 'default' in p);
          for (const [key] of defaulted) expect([at, key, key in value]).toEqual([at, key, true]);
        }
      }
      if (node['x-kubernetes-list-type'] === 'map') {
        const items = node.items as SchemaNode;
        for (const key of node['x-kubernetes-list-map-keys'] as string[]) expect(items.required).toContain(key);
      }
    }
  });

  it('carries the CEL rules beside the zod checks', () => {
    const spec = crdOf(KINDS.QueueProject).spec.versions[0].schema.openAPIV3Schema.properties as Record<string, SchemaNode>;
    const retries = (spec.spec.properties as Record<string, SchemaNode>).retries;
    expect(retries['x-kubernetes-validations']).toEqual([
      { rule: 'self.default <= self.max', message: 'retries.default must not exceed retries.max', fieldPath: '.default' },
    ]);
    expect(retries.default).toEqual({ default: 3, max: 10 });
  });

  it('prints Ready and Reason first and Age last; a KvBackup its phase instead', () => {
    expect(crdOf(KINDS.VectorIndex).spec.versions[0].additionalPrinterColumns.map((c) => c.name)).toEqual(['Ready', 'Reason', 'Dimension', 'Metric', 'Age']);
    expect(crdOf(KV_BACKUP_KIND).spec.versions[0].additionalPrinterColumns.map((c) => c.name)).toEqual(['Database', 'Phase', 'Bytes', 'Completed', 'Age']);
    // A queue project's server with -o wide, from its status.
    const queue = crdOf(KINDS.QueueProject).spec.versions[0];
    expect(queue.additionalPrinterColumns.find((c) => c.name === 'Server')).toMatchObject({ jsonPath: '.status.queueServer', priority: 1 });
    expect((queue.schema.openAPIV3Schema.properties as Record<string, SchemaNode>)['status']).toMatchObject({ properties: { queueServer: { type: 'string' } } });
  });

  it('requires a spec only where the spec has fields without defaults', () => {
    expect(crdOf(KINDS.VectorIndex).spec.versions[0].schema.openAPIV3Schema.required).toEqual(['spec']);
    expect(crdOf(KINDS.QueueProject).spec.versions[0].schema.openAPIV3Schema.required).toBeUndefined();
  });
});

describe('structuralSchema', () => {
  it('refuses what a structural schema cannot say', () => {
    expect(() => structuralSchema(z.object({ a: z.union([z.string(), z.number()]) }))).toThrow(".a: 'anyOf' is not allowed in a structural schema");
    expect(() => structuralSchema(z.object({ a: z.any() }))).toThrow('.a: every node of a structural schema needs a type');
  });

  it('keeps every rule withRule attached', () => {
    const twice = withRule(withRule(z.number(), { rule: 'self > 0', message: 'positive' }, (n) => n > 0), { rule: 'self < 9', message: 'small' }, (n) => n < 9);
    expect(structuralSchema(twice)['x-kubernetes-validations']).toEqual([
      { rule: 'self > 0', message: 'positive' },
      { rule: 'self < 9', message: 'small' },
    ]);
    expect(twice.safeParse(0).success).toBe(false);
    expect(twice.safeParse(9).success).toBe(false);
    expect(twice.safeParse(5).success).toBe(true);
  });
});
