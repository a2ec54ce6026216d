// HTTP on a raw socket (split from fuzz.ts, which exports it): a request as bytes (strings as WTF-8), written on a
// fresh connection, and the response parsed byte by byte, with what makes it incomplete.
import { connect } from 'node:net';

/** One request. `path` is sent as is (percent-encode it yourself, see {@link encodeSegment}); strings are sent as WTF-8. */
export interface FuzzRequest {
  method: string;
  path: string;
  headers?: Record<string, string | Buffer>;
  body?: string | Buffer;
}

/** A parsed HTTP response; `problem` says why it is not a complete one (then the other fields are what arrived). */
export interface RawResponse {
  status: number;
  /** Lower-cased names; a repeated header keeps its last value. */
  headers: Record<string, string>;
  body: string;
  problem?: string;
}

/**
 * A JavaScript string as WTF-8: UTF-8, except that a lone surrogate becomes its own 3-byte sequence
 * (`"\ud800"` → ED A0 80) instead of U+FFFD, which is what a hostile client can put on the wire.
 */
export function wtf8(text: string): Buffer {
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    let code = text.charCodeAt(i);
    if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length) {
      const low = text.charCodeAt(i + 1);
      if (low >= 0xdc00 && low <= 0xdfff) {
        code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
        i++;
      }
    }
    if (code < 0x80) bytes.push(code);
    else if (code < 0x800) bytes.push(0xc0 | (code >> 6), 0x80 | (code & 0x3f));
    else if (code < 0x10000) bytes.push(0xe0 | (code >> 12), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f));
    else bytes.push(0xf0 | (code >> 18), 0x80 | ((code >> 12) & 0x3f), 0x80 | ((code >> 6) & 0x3f), 0x80 | (code & 0x3f));
  }
  return Buffer.from(bytes);
}

/** Percent-encodes every byte of the WTF-8 form except RFC 3986 unreserved characters (a lone surrogate becomes `%ED%A0%80`). */
export function encodeSegment(text: string): string {
  let out = '';
  for (const byte of wtf8(text)) {
    const char = String.fromCharCode(byte);
    out += /[A-Za-z0-9\-._~]/.test(char) ? char : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** The bytes of a request: request line, `Host` (unless `host: false`), `Connection: close`, the headers, `Content-Length` when there is a body. */
export function requestBytes(url: string, request: FuzzRequest, options: { host?: boolean } = {}): Buffer {
  const { host } = new URL(url);
  const lines: Buffer[] = [Buffer.from(`${request.method} ${request.path} HTTP/1.1\r\n`, 'latin1')];
  if (options.host !== false) lines.push(Buffer.from(`Host: ${host}\r\n`));
  lines.push(Buffer.from('Connection: close\r\n'));
  const body = typeof request.body === 'string' ? wtf8(request.body) : request.body;
  for (const [name, value] of Object.entries(request.headers ?? {})) {
    lines.push(Buffer.concat([Buffer.from(`${name}: `, 'latin1'), typeof value === 'string' ? wtf8(value) : value, Buffer.from('\r\n')]));
  }
  if (body !== undefined) lines.push(Buffer.from(`Content-Length: ${body.length}\r\n`));
  lines.push(Buffer.from('\r\n'));
  if (body !== undefined) lines.push(body);
  return Buffer.concat(lines);
}

/**
 * Writes bytes to the server of `url` on a fresh connection and reads one response. Resolves with
 * `problem` set (never rejects) when the answer is not a complete HTTP/1.1 response within
 * `timeoutMs`, when a HEAD answer carries a body, or when bytes follow the declared body.
 * `head: 'maybe'` (garbage that may or may not count as a HEAD request) accepts a response with its
 * declared body or with none.
 */
export function sendRaw(url: string, bytes: Buffer, options: { head?: boolean | 'maybe'; timeoutMs?: number } = {}): Promise<RawResponse> {
  const { hostname, port } = new URL(url);
  const timeoutMs = options.timeoutMs ?? 10_000;
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let done = false;
    const socket = connect({ host: hostname, port: Number(port) });
    const finish = (ended: boolean, error?: Error) => {
      if (done) return;
      const parsed = parseResponse(Buffer.concat(chunks), options.head ?? false, ended);
      if (!parsed && !ended && !error) return; // wait for more bytes
      done = true;
      clearTimeout(timer);
      socket.destroy();
      if (parsed) resolve(parsed);
      else {
        const text = Buffer.concat(chunks).toString('latin1');
        resolve({ status: 0, headers: {}, body: text, problem: error ? `socket error ${error.message} after ${JSON.stringify(text.slice(0, 200))}` : `connection closed before a complete response: ${JSON.stringify(text.slice(0, 200))}` });
      }
    };
    const timer = setTimeout(() => {
      if (done) return;
      done = true;
      socket.destroy();
      const text = Buffer.concat(chunks).toString('latin1');
      resolve({ status: 0, headers: {}, body: text, problem: `no complete response within ${timeoutMs} ms; got ${JSON.stringify(text.slice(0, 200))}` });
    }, timeoutMs);
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      finish(false);
    });
    socket.on('end', () => finish(true));
    socket.on('close', () => finish(true));
    socket.on('error', (error) => finish(true, error));
    // The server may answer and close before reading everything (431, 413): a write error is not the test's concern.
    socket.write(bytes, () => undefined);
  });
}

/**
 * Parses the first final response in `data` (1xx interim responses are skipped). Returns undefined
 * while it is incomplete and the connection is still open.
 */
function parseResponse(data: Buffer, head: boolean | 'maybe', ended: boolean): RawResponse | undefined {
  let at = 0;
  for (;;) {
    const end = data.indexOf('\r\n\r\n', at);
    if (end < 0) return ended ? incomplete(data, data.length === at ? 'connection closed without a response' : 'no end of the header section') : undefined;
    const lines = data.subarray(at, end).toString('latin1').split('\r\n');
    const match = /^HTTP\/1\.[01] (\d{3})(?: .*)?$/.exec(lines[0] ?? '');
    if (!match) return { status: 0, headers: {}, body: data.toString('latin1'), problem: `not an HTTP/1.1 status line: ${JSON.stringify(lines[0])}` };
    const status = Number(match[1]);
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const rest = data.subarray(end + 4);
    if (status >= 100 && status < 200) {
      at = end + 4;
      continue;
    }
    if (head === 'maybe' && ended && rest.length === 0) return { status, headers, body: '' };
    // a server-sent-event stream (KV /subscribe) does not end: its head is the whole answer to check
    if (!head && status < 300 && eventStream(headers)) return { status, headers, body: rest.toString('utf8') };
    if (head === true || status === 204 || status === 304) {
      if (rest.length > 0) return { status, headers, body: rest.toString('utf8'), problem: `${rest.length} bytes of body after a response that cannot have one` };
      return ended || head === true ? { status, headers, body: '' } : undefined;
    }
    if (/\bchunked\b/i.test(headers['transfer-encoding'] ?? '')) {
      const decoded = dechunk(rest);
      if (decoded) return { status, headers, body: decoded.toString('utf8') };
      return ended ? { status, headers, body: rest.toString('utf8'), problem: 'chunked body not terminated' } : undefined;
    }
    if (headers['content-length'] !== undefined) {
      const length = Number(headers['content-length']);
      if (rest.length < length) return ended ? { status, headers, body: rest.toString('utf8'), problem: `body of ${rest.length} bytes, Content-Length ${length}` } : undefined;
      if (rest.length > length) return { status, headers, body: rest.toString('utf8'), problem: `${rest.length - length} bytes after the declared body` };
      return { status, headers, body: rest.toString('utf8') };
    }
    return ended ? { status, headers, body: rest.toString('utf8') } : undefined;
  }
}

export function eventStream(headers: Record<string, string>): boolean {
  return (headers['content-type'] ?? '').toLowerCase().startsWith('text/event-stream');
}

function incomplete(data: Buffer, why: string): RawResponse {
  return { status: 0, headers: {}, body: data.toString('latin1'), problem: `${why}: ${JSON.stringify(data.toString('latin1').slice(0, 200))}` };
}

/** A whole chunked body, or undefined while its last chunk has not arrived. */
function dechunk(data: Buffer): Buffer | undefined {
  const parts: Buffer[] = [];
  let at = 0;
  for (;;) {
    const eol = data.indexOf('\r\n', at);
    if (eol < 0) return undefined;
    const size = parseInt(data.subarray(at, eol).toString('latin1'), 16);
    if (!Number.isFinite(size)) return undefined;
    if (size === 0) return Buffer.concat(parts);
    if (data.length < eol + 2 + size + 2) return undefined;
    parts.push(data.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
}

/** {@link requestBytes} then {@link sendRaw}. */
export function send(url: string, request: FuzzRequest, options: { timeoutMs?: number } = {}): Promise<RawResponse> {
  return sendRaw(url, requestBytes(url, request), { head: request.method === 'HEAD', ...options });
}
