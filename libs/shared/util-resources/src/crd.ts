import { z } from 'zod';
import { stringify } from 'yaml';
import { type CrdInfo, GROUP, KINDS, type PrinterColumn, VERSION } from './kinds';

/** A JSON Schema node as the API server reads it (JSONSchemaProps), loosely typed. */
export type SchemaNode = Record<string, unknown>;

/** apiextensions.k8s.io/v1 CustomResourceDefinition, as much of it as restash writes. */
export interface CustomResourceDefinition {
  apiVersion: 'apiextensions.k8s.io/v1';
  kind: 'CustomResourceDefinition';
  metadata: { name: string; labels: Record<string, string> };
  spec: {
    group: string;
    names: { kind: string; listKind: string; plural: string; singular: string; shortNames: string[]; categories: string[] };
    scope: 'Namespaced';
    versions: Array<{
      name: string;
      served: boolean;
      storage: boolean;
      subresources: { status: Record<string, never> };
      additionalPrinterColumns: PrinterColumn[];
      schema: { openAPIV3Schema: SchemaNode };
    }>;
  };
}

/** Keywords JSON Schema has and a structural schema may not (or restash never needs). */
const REFUSED = ['anyOf', 'oneOf', 'allOf', 'not', '$ref', '$defs', 'definitions', 'const', 'patternProperties'];

/**
 * A zod schema as a Kubernetes structural schema: `z.toJSONSchema(schema, { target: 'openapi-3.0',
 * io: 'input' })` (defaults are the API server's defaults), then without `$schema`, without
 * `additionalProperties: false` (a structural schema prunes unknown fields instead, and kubectl's
 * strict validation refuses them) and without the ±2^53-1 bounds zod gives integers (the API server's
 * int64 holds more). `x-kubernetes-*` keys come from the zod schemas' `.meta()`.
 * @throws Error naming the path of a node without `type` or with a keyword a structural schema refuses
 */
export function structuralSchema(schema: z.ZodType): SchemaNode {
  const json = z.toJSONSchema(schema, { target: 'openapi-3.0', io: 'input' }) as SchemaNode;
  delete json.$schema;
  return clean(json, '');
}

function clean(node: SchemaNode, path: string): SchemaNode {
  const where = path || '(root)';
  for (const keyword of REFUSED) {
    if (keyword in node) throw new Error(`${where}: '${keyword}' is not allowed in a structural schema`);
  }
  if (typeof node.type !== 'string') throw new Error(`${where}: every node of a structural schema needs a type`);
  const out: SchemaNode = { ...node };
  if (out.additionalProperties === false) delete out.additionalProperties;
  if (out.type === 'integer') {
    if (out.maximum === Number.MAX_SAFE_INTEGER) delete out.maximum;
    if (out.minimum === Number.MIN_SAFE_INTEGER) delete out.minimum;
  }
  if (out.properties) {
    out.properties = Object.fromEntries(
      Object.entries(out.properties as Record<string, SchemaNode>).map(([key, value]) => [key, clean(value, `${path}.${key}`)]),
    );
  }
  if (out.items) out.items = clean(out.items as SchemaNode, `${path}[*]`);
  return out;
}

/** The columns every tenant resource's kind prints before its own. */
const READY_COLUMNS: PrinterColumn[] = [
  { name: 'Ready', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].status' },
  { name: 'Reason', type: 'string', jsonPath: '.status.conditions[?(@.type=="Ready")].reason' },
];
const AGE_COLUMN: PrinterColumn = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };

/**
 * The CustomResourceDefinition of a kind (namespaced, group restash.dev, version v1alpha1, category
 * `restash`, status subresource; printer columns Ready and Reason for the tenant resources' kinds, then the kind's
 * own, then Age). Its spec and status schemas are generated from the kind's zod schemas, the ones the local
 * parser checks files with. A spec that may be empty (every field defaulted) defaults to `{}` (spelled out when
 * the spec has rules of its own).
 */
export function crdOf(info: CrdInfo): CustomResourceDefinition {
  const { kind } = info;
  const spec = structuralSchema(info.spec);
  // The API server runs a spec's CEL rules on its default as written (no nested defaulting): a spec with rules of its
  // own gets its defaults spelled out.
  if (info.spec.safeParse({}).success) spec.default = spec['x-kubernetes-validations'] ? info.spec.parse({}) : {};
  const openAPIV3Schema: SchemaNode = {
    type: 'object',
    description: `${kind}: a restash ${info.description} in the tenant's namespace.`,
    properties: {
      apiVersion: { type: 'string' },
      kind: { type: 'string' },
      metadata: { type: 'object' },
      spec,
      status: structuralSchema(info.status),
    },
    ...(spec.default ? {} : { required: ['spec'] }),
    ...(info.nameMaxLength || info.objectRules
      ? {
          'x-kubernetes-validations': [
            ...(info.nameMaxLength ? [{ rule: `size(self.metadata.name) <= ${info.nameMaxLength}`, message: `metadata.name must be at most ${info.nameMaxLength} characters` }] : []),
            ...(info.objectRules ?? []),
          ],
        }
      : {}),
  };
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${info.plural}.${GROUP}`, labels: { 'app.kubernetes.io/part-of': 'restash' } },
    spec: {
      group: GROUP,
      names: {
        kind,
        listKind: info.listKind,
        plural: info.plural,
        singular: info.singular,
        shortNames: info.shortNames,
        categories: ['restash'],
      },
      scope: 'Namespaced',
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: [...(kind in KINDS ? READY_COLUMNS : []), ...info.printerColumns, AGE_COLUMN],
          schema: { openAPIV3Schema },
        },
      ],
    },
  };
}

/** The file name of a kind's CRD under deploy/crds/. */
export function crdFileName(info: CrdInfo): string {
  return `${GROUP}_${info.plural}.yaml`;
}

/** The text of a kind's CRD file: a header naming the generator, then the CRD as YAML. */
export function crdFileText(info: CrdInfo): string {
  return `# Generated by libs/shared/util-resources/src/bin/crds.ts (make crds) from the zod schemas of\n# libs/shared/util-resources/src/kinds.ts: do not edit.\n${stringify(crdOf(info), { lineWidth: 0 })}`;
}
