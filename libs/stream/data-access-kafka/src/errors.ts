/**
 * Kafka's error code name (e.g. `UNKNOWN_TOPIC_OR_PARTITION`, `REBALANCE_IN_PROGRESS`) of an error thrown by
 * this library's Kafka calls, or '' when the broker gave none (unreachable, timed out, a client error).
 *
 * @platformatic/kafka puts the code on a ProtocolError's `apiId` and wraps it: a ResponseError or a
 * MultipleErrors (retries exhausted) lists its errors in `errors`, others chain `cause`; this searches
 * them all, depth first, and answers the first code found. A broker refusing a record answers with a
 * per-record UNKNOWN_SERVER_ERROR beside the partition's own code (e.g. INVALID_TIMESTAMP): the specific
 * code wins. The client's metadata call reports a missing topic as a UserError "Unknown topic <name>."
 * without the code, which counts as UNKNOWN_TOPIC_OR_PARTITION here.
 */
export function kafkaErrorCode(error: unknown): string {
  const codes: string[] = [];
  const seen = new Set<unknown>();
  const visit = (current: unknown, depth: number): void => {
    if (!current || typeof current !== 'object' || depth > 8 || seen.has(current)) return;
    seen.add(current);
    const e = current as { apiId?: unknown; errors?: unknown; cause?: unknown; message?: unknown; code?: unknown };
    if (typeof e.apiId === 'string' && e.apiId !== '') codes.push(e.apiId);
    if (e.code === 'PLT_KFK_USER' && typeof e.message === 'string' && e.message.startsWith('Unknown topic ')) codes.push('UNKNOWN_TOPIC_OR_PARTITION');
    for (const inner of Array.isArray(e.errors) ? e.errors : []) visit(inner, depth + 1);
    visit(e.cause, depth + 1);
  };
  visit(error, 0);
  return codes.find((code) => code !== 'UNKNOWN_SERVER_ERROR') ?? codes[0] ?? '';
}
