// What the kinds share (split from kinds.ts, which exports it): the API group and version, CEL rules beside the
// zod checks that mirror them (withRule, withTransitionRule), and the fields several kinds use: DNS labels, Secret
// keys, quantities, http(s) URLs and request limits.
import { z } from 'zod';

/** The API group of restash's custom resources. */
export const GROUP = 'restash.dev';
/** The one served and stored version. */
export const VERSION = 'v1alpha1';
/** `apiVersion` of every restash resource. */
export const API_VERSION = `${GROUP}/${VERSION}` as const;

/** A CEL rule as the API server reads it from `x-kubernetes-validations`. */
export interface CelRule {
  rule: string;
  message: string;
  /** For rules on an object that are about one of its fields, e.g. `.max`. */
  fieldPath?: string;
}

const VALIDATIONS = 'x-kubernetes-validations';

/**
 * `schema` with a CEL rule for the API server and the same check for zod (the local parser), so that
 * rule and check live side by side. Rules accumulate: a second call keeps the first rule.
 * @param check the rule in TypeScript, on the parsed (defaulted) value
 */
export function withRule<T extends z.ZodType>(schema: T, rule: CelRule, check: (value: z.output<T>) => boolean): T {
  const before = (schema.meta()?.[VALIDATIONS] as CelRule[] | undefined) ?? [];
  const path = rule.fieldPath ? rule.fieldPath.replace(/^\./, '').split('.') : [];
  return schema.refine(check, { message: rule.message, path }).meta({ [VALIDATIONS]: [...before, rule] }) as T;
}

/**
 * `schema` with a CEL transition rule (one that reads `oldSelf`): the API server checks it on
 * updates; the local parser, which sees no old object, cannot.
 */
export function withTransitionRule<T extends z.ZodType>(schema: T, rule: CelRule): T {
  const before = (schema.meta()?.[VALIDATIONS] as CelRule[] | undefined) ?? [];
  return schema.meta({ [VALIDATIONS]: [...before, rule] }) as T;
}

/** A Kubernetes DNS label (RFC 1123): names and namespaces of the resources. */
export const DNS_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
export const dnsLabel = z.string().max(63).regex(DNS_LABEL, 'must be a DNS label: lower-case letters, digits and -, at most 63');

/** A Secret's name (a DNS subdomain) and one of its keys, in the resource's namespace. */
export const secretKeyRef = z.strictObject({
  name: z
    .string()
    .max(253)
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/, 'must be a Secret name (a DNS subdomain)'),
  key: z.string().max(253).regex(/^[-._a-zA-Z0-9]+$/, 'must be a Secret key: letters, digits, - _ .'),
});
export type SecretKeyRef = z.infer<typeof secretKeyRef>;

/** A storage size as a Kubernetes quantity without sign or exponent, e.g. `1Gi`, `500M`. */
export const quantity = z.string().regex(/^[0-9]+(\.[0-9]+)?([KMGTPE]i|[kMGTPE])?$/, 'must be a quantity such as 1Gi or 500M');

export const httpUrl = z.string().max(2048).regex(/^https?:\/\//, 'must be an http:// or https:// URL');

/** Upstash's documented default maximum request size (redis/troubleshooting/max_request_size_exceeded). */
export const KV_MAX_REQUEST_BYTES = 10 * 1024 * 1024;
/** 1 MiB: Upstash Kafka's maximum message size and QStash's on its free plan. */
export const MESSAGE_MAX_REQUEST_BYTES = 1024 * 1024;

/** Limits of a resource: largest request in bytes, and requests per UTC day (0: unlimited). */
export function limits(maxRequestBytes: number) {
  return z
    .strictObject({
      maxRequestBytes: z.number().int().min(1).default(maxRequestBytes).describe('Largest request body in bytes; larger ones are refused.'),
      dailyRequests: z.number().int().min(0).default(0).describe('Requests per UTC day; 0 is unlimited.'),
    })
    .prefault({})
    .describe('Request limits.');
}
