import { z } from 'zod';

/** A Kubernetes-style name: a DNS label (lower case, digits, '-'; 1–63 characters). */
const dnsLabel = z
  .string()
  .regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'must be a DNS label: lower-case letters, digits and -, at most 63');

/** Upstash's documented default maximum request size (redis/troubleshooting/max_request_size_exceeded). */
export const DEFAULT_MAX_REQUEST_BYTES = 10 * 1024 * 1024;

export const kvDatabaseSpecSchema = z.object({
  name: dnsLabel,
  redis: z.object({
    /** The Redis the database lives on, with the gateway's admin credentials and the logical db. */
    url: z.string().regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL'),
  }),
  limits: z
    .object({
      maxRequestBytes: z.number().int().positive().default(DEFAULT_MAX_REQUEST_BYTES),
      /** Commands per UTC day; 0 or absent means unlimited. */
      dailyRequests: z.number().int().nonnegative().default(0),
    })
    .default({ maxRequestBytes: DEFAULT_MAX_REQUEST_BYTES, dailyRequests: 0 }),
});
export type KvDatabaseSpec = z.infer<typeof kvDatabaseSpecSchema>;

/**
 * A tenant as declared by a platform team: the document `tenants apply -f` reads (and, later, the
 * spec of the `Tenant` custom resource the operator reconciles).
 */
export const tenantDocumentSchema = z.object({
  apiVersion: z.literal('restash.dev/v1alpha1'),
  kind: z.literal('Tenant'),
  metadata: z.object({ name: dnsLabel }),
  spec: z
    .object({
      kv: z
        .object({
          databases: z.array(kvDatabaseSpecSchema).default([]),
        })
        .default({ databases: [] }),
    })
    .superRefine((spec, ctx) => {
      const seen = new Set<string>();
      spec.kv.databases.forEach((db, i) => {
        if (seen.has(db.name)) {
          ctx.addIssue({ code: 'custom', path: ['kv', 'databases', i, 'name'], message: `duplicate database name '${db.name}'` });
        }
        seen.add(db.name);
      });
    }),
});
export type TenantDocument = z.infer<typeof tenantDocumentSchema>;

/** The plain tokens of one KV database; they exist only in the tenant's Secret or local env file. */
export interface KvDatabaseTokens {
  standard: string;
  readonly: string;
}

/** Plain tokens of a tenant, by database name. */
export interface TenantTokens {
  kv: Record<string, KvDatabaseTokens>;
}
