/**
 * Retries an assertion until it passes or `timeoutMs` elapses, for effects that arrive
 * asynchronously (pub/sub invalidation, server-sent events). Rethrows the last failure.
 */
export async function eventually<T>(assertion: () => Promise<T> | T, timeoutMs = 5_000, intervalMs = 25): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await assertion();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  }
}
