/**
 * A request header value as the text the client meant. Node hands header values over as Latin-1 (one
 * character per byte); `curl` and most clients send UTF-8, so a value whose bytes are valid UTF-8 holding a
 * non-ASCII character is read as UTF-8 (`Ã¼` → `ü`). Any other value stays as it is: Node's `fetch` (the
 * official SDKs) sends a character up to U+00FF as that one byte, which is not valid UTF-8 alone (`ü` → 0xFC →
 * `ü`). Used for the queue's own `Upstash-*` headers and the Stream webhook's message headers.
 *
 * @param raw the value as Node's parser gave it (`rawHeaders`)
 */
export function headerText(raw: string): string {
  // ASCII needs no decoding; a character past U+00FF did not come from Node's parser (it is no byte).
  if (!/[\x80-\xff]/.test(raw) || /[^\x00-\xff]/.test(raw)) return raw;
  try {
    return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(Buffer.from(raw, 'latin1'));
  } catch {
    return raw;
  }
}
