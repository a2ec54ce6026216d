/**
 * RFC 7396 JSON merge patch: what `update` with `metadataUpdateMode: "PATCH"` does to metadata
 * (docs/vector.md, "Vector: update"). Members of `patch` set to null are removed; objects merge recursively;
 * anything else replaces. Neither argument is modified (unchanged members are shared, not copied).
 *
 * Iterative, so a patch of any depth cannot overflow the stack; callers still check the result's
 * depth and size before storing it (checkMetadata).
 */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const root: Record<string, unknown> = isObject(target) ? { ...target } : {};
  const work: Array<{ into: Record<string, unknown>; patch: Record<string, unknown> }> = [{ into: root, patch }];
  while (work.length > 0) {
    const { into, patch: p } = work.pop() as { into: Record<string, unknown>; patch: Record<string, unknown> };
    for (const [key, value] of Object.entries(p)) {
      if (value === null) {
        delete into[key];
      } else if (isObject(value)) {
        const existing = Object.hasOwn(into, key) ? into[key] : undefined;
        const child: Record<string, unknown> = isObject(existing) ? { ...existing } : {};
        set(into, key, child);
        work.push({ into: child, patch: value });
      } else {
        set(into, key, value);
      }
    }
  }
  return root;
}

/** Sets an own member, also for the key `__proto__` (JSON.parse makes it an ordinary member). */
function set(into: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(into, key, { value, enumerable: true, writable: true, configurable: true });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
