/**
 * Raw HTTP for gateway tests: a JSON body (or raw text) in, the status, the parsed JSON body (the
 * text when it is not JSON) and the headers out. `token` becomes `Authorization: Bearer <token>`.
 */
export async function call(
  url: string,
  init: { method?: string; token?: string; body?: unknown; raw?: string | Buffer; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: unknown; headers: Headers }> {
  const headers: Record<string, string> = { ...init.headers };
  if (init.token) headers.authorization = `Bearer ${init.token}`;
  const body = init.raw ?? (init.body === undefined ? undefined : JSON.stringify(init.body));
  const response = await fetch(url, { method: init.method ?? (body === undefined ? 'GET' : 'POST'), headers, body });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    // not JSON: the test asserts on the text
  }
  return { status: response.status, body: parsed, headers: response.headers };
}
