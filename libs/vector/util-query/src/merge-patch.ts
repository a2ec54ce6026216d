/**
 * RFC 7396 JSON merge patch: what `update` with `metadataUpdateMode: "PATCH"` does to metadata
 * (upstash-compat.md §2.3). Members of `patch` set to null are removed; objects merge recursively;
 * anything else replaces. Neither argument is modified.
 */
export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const result: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
