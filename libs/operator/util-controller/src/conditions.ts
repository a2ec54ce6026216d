/** `metav1.ConditionStatus`. */
export type ConditionStatus = 'True' | 'False' | 'Unknown';

/**
 * `metav1.Condition` as stored in `status.conditions` (a list-type map keyed by `type`):
 * `lastTransitionTime` is RFC 3339 at second precision, as the API server writes `metav1.Time`.
 */
export interface Condition {
  type: string;
  status: ConditionStatus;
  reason: string;
  message: string;
  lastTransitionTime: string;
  observedGeneration?: number;
}

/** What a reconciler decides; {@link setCondition} adds the times and the generation. */
export type ConditionUpdate = Pick<Condition, 'type' | 'status' | 'reason' | 'message'>;

/** The `reason` pattern of metav1.Condition (its CRD schema): one CamelCase word, `_ , :` allowed inside. */
export const CONDITION_REASON_PATTERN = /^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/;
/** metav1.Condition's `reason` maximum length. */
export const CONDITION_REASON_MAX_LENGTH = 1024;
/** metav1.Condition's `message` maximum length; longer messages are cut by {@link setCondition}. */
export const CONDITION_MESSAGE_MAX_LENGTH = 32_768;

/** True when `reason` is one the API server accepts in a metav1.Condition (pattern and length). */
export function isValidConditionReason(reason: string): boolean {
  return reason.length <= CONDITION_REASON_MAX_LENGTH && CONDITION_REASON_PATTERN.test(reason);
}

/** `metav1.Time` text of `at`: RFC 3339 in UTC, whole seconds (`2026-01-02T03:04:05Z`). */
export function conditionTime(at: Date): string {
  return at.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * Returns `conditions` with the condition of `update.type` set, following metav1.Condition rules
 * (k8s.io/apimachinery `meta.SetStatusCondition`): `lastTransitionTime` is kept when the status is
 * unchanged and becomes `now` when it changes or the condition is new; `reason`, `message` and
 * `observedGeneration` always take the new values. The other conditions and their order are kept;
 * a new type is appended. The input is not modified. Messages longer than
 * {@link CONDITION_MESSAGE_MAX_LENGTH} are cut to it (a backend error can be long).
 *
 * @param observedGeneration the `metadata.generation` the reconciler acted on
 * @throws TypeError when `update.reason` is not a valid condition reason (a programming error: the
 *   API server would refuse the whole status write)
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  update: ConditionUpdate,
  observedGeneration: number,
  now: Date,
): Condition[] {
  if (!isValidConditionReason(update.reason)) {
    throw new TypeError(`condition reason ${JSON.stringify(update.reason)} does not match ${CONDITION_REASON_PATTERN}`);
  }
  const list = conditions ?? [];
  const index = list.findIndex((c) => c.type === update.type);
  const previous = index >= 0 ? list[index] : undefined;
  const next: Condition = {
    type: update.type,
    status: update.status,
    reason: update.reason,
    message: update.message.length > CONDITION_MESSAGE_MAX_LENGTH ? update.message.slice(0, CONDITION_MESSAGE_MAX_LENGTH) : update.message,
    lastTransitionTime: previous && previous.status === update.status ? previous.lastTransitionTime : conditionTime(now),
    observedGeneration,
  };
  return index >= 0 ? list.map((c, i) => (i === index ? next : c)) : [...list, next];
}

/** The condition of `type` in `conditions`, if any. */
export function findCondition(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/**
 * True when two status values differ (deep comparison of JSON-like values: object key order does
 * not matter, array order does, `undefined` properties count as absent). A reconciler writes status
 * only when this is true, so an unchanged status never triggers a watch event of its own.
 */
export function statusChanged(a: unknown, b: unknown): boolean {
  return !jsonEqual(a, b);
}

function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((item, i) => jsonEqual(item, b[i]));
  }
  const left = definedEntries(a as Record<string, unknown>);
  const right = definedEntries(b as Record<string, unknown>);
  if (left.size !== right.size) return false;
  for (const [key, value] of left) {
    if (!right.has(key) || !jsonEqual(value, right.get(key))) return false;
  }
  return true;
}

function definedEntries(object: Record<string, unknown>): Map<string, unknown> {
  return new Map(Object.entries(object).filter(([, value]) => value !== undefined));
}
