// The status of the kinds (split from kinds.ts, which exports it): the Ready condition's reasons, metav1.Condition,
// the status every kind has, and the date-time strings of status fields.
import { z } from 'zod';

/** The reasons of the `Ready` condition. */
export const CONDITION_REASONS = [
  'Reconciling',
  'Ready',
  'InvalidSpec',
  'SecretNotFound',
  'StorageConflict',
  'BackendError',
  'NotSupported',
  'Deleting',
  'DeleteFailed',
  'RegistryUnavailable',
] as const;
export type ConditionReason = (typeof CONDITION_REASONS)[number];

/** metav1.Condition, with the validation of its Go type's kubebuilder markers. */
export const conditionSchema = z.strictObject({
  type: z
    .string()
    .max(316)
    .regex(new RegExp('^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$')),
  status: z.enum(['True', 'False', 'Unknown']),
  observedGeneration: z.number().int().min(0).optional(),
  lastTransitionTime: z.string().meta({ format: 'date-time' }),
  reason: z
    .string()
    .min(1)
    .max(1024)
    .regex(/^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/),
  message: z.string().max(32_768),
});
export type Condition = z.output<typeof conditionSchema>;

/** The status of every kind: the generation it reflects, its conditions (`Ready`), its Secret's name. */
export const statusSchema = z.strictObject({
  observedGeneration: z.number().int().min(0).optional(),
  conditions: z
    .array(conditionSchema)
    .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] })
    .optional(),
  secretName: z.string().optional(),
});
export type ResourceStatus = z.output<typeof statusSchema>;

export const dateTime = z.string().meta({ format: 'date-time' });
