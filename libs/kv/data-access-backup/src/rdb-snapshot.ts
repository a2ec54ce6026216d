import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { type Socket, connect as connectTcp } from 'node:net';
import { connect as connectTls } from 'node:tls';
import { redisUrlAuth } from '@restash/shared/util-config';

/** What {@link takeRdbSnapshot} wrote. */
export interface RdbSnapshot {
  /** The file's size in bytes. */
  bytes: number;
  /** How the server sent it: `disk` (a BGSAVE file, `$<length>`) or `diskless` (`$EOF:<mark>`, streamed while made). */
  transfer: 'disk' | 'diskless';
}

/** Thrown when the server refuses the snapshot (e.g. `-NOPERM`: the URL's user may not run PSYNC) or breaks it off. */
export class RdbSnapshotError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RdbSnapshotError';
  }
}

/** The length of the end mark of a diskless transfer (`$EOF:<40 random bytes>`, Redis's CONFIG_RUN_ID_SIZE). */
const EOF_MARK_BYTES = 40;

/**
 * Takes an RDB snapshot of the Redis (or Valkey) server a `redis://` or `rediss://` URL names, into `file`, through the
 * replication protocol as `redis-cli --rdb` does: after `AUTH` with the URL's user and `REPLCONF capa eof`,
 * `PSYNC ? -1` (`+FULLRESYNC …`) makes the server send its whole dataset as one RDB (every logical database, expiry
 * times, module data such as RediSearch's index definitions), which a new server started with that file as its
 * `dbfilename` loads as it was. The server sends it
 * either after a BGSAVE (`$<length>\r\n` then the bytes) or diskless (`$EOF:<mark>\r\n`, the bytes, the mark);
 * before either it may send `\n` keepalives. The connection is closed once the RDB is complete (the server drops
 * it as a lost replica). The URL's user needs the `psync` and `replconf` commands (`+@admin`).
 * @param timeoutMs longest silence from the server, in ms, before the snapshot is abandoned
 * @throws RdbSnapshotError when the server refuses AUTH, REPLCONF or PSYNC, closes early, or stays silent past `timeoutMs`;
 *   the socket's Error when it cannot be reached
 */
export async function takeRdbSnapshot(url: string, file: string, timeoutMs = 30_000): Promise<RdbSnapshot> {
  const parsed = new URL(url);
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') throw new RdbSnapshotError(`a snapshot needs a redis:// or rediss:// URL, not ${parsed.protocol}`);
  const { username, password } = redisUrlAuth(url);
  const host = parsed.hostname.replace(/^\[|\]$/g, '');
  const port = Number(parsed.port || 6379);
  const socket: Socket = parsed.protocol === 'rediss:' ? connectTls({ host, port, servername: host }) : connectTcp({ host, port });
  socket.setTimeout(timeoutMs);
  const out = createWriteStream(file, { mode: 0o600 });
  try {
    await once(socket, parsed.protocol === 'rediss:' ? 'secureConnect' : 'connect');
    return await new Promise<RdbSnapshot>((resolve, reject) => {
      let buffer: Buffer = Buffer.alloc(0);
      // Each step's one-line answer, then the payload's header; `\n` keepalives may come before any of them.
      // One at a time: a server refuses PSYNC while answers to earlier commands are still pending.
      const steps: Array<[string, Buffer]> = [
        ...(password === undefined ? [] : [['AUTH', command('AUTH', ...(username !== undefined ? [username] : []), password)] as [string, Buffer]]),
        ['REPLCONF', command('REPLCONF', 'capa', 'eof')], // this replica takes a diskless transfer (the server chooses: repl-diskless-sync)
        ['PSYNC', command('PSYNC', '?', '-1')],
      ];
      let state: 'step' | 'header' | 'length' | 'eof' = 'step';
      let remaining = 0;
      let mark: Buffer = Buffer.alloc(0);
      let written = 0;
      let done = false;
      const fail = (message: string) => done || reject(new RdbSnapshotError(message));
      const write = (chunk: Buffer) => {
        written += chunk.length;
        // The disk sets the pace: the socket waits while the file's buffer is full.
        if (!out.write(chunk)) {
          socket.pause();
          out.once('drain', () => socket.resume());
        }
      };
      const finish = (transfer: RdbSnapshot['transfer']) => {
        done = true;
        socket.removeAllListeners('data');
        socket.destroy();
        out.end(() => resolve({ bytes: written, transfer }));
      };
      socket.on('timeout', () => fail(`no data from the server for ${timeoutMs} ms`));
      socket.on('error', (error) => done || reject(error));
      socket.on('close', () => fail('the server closed the connection before the RDB was complete'));
      socket.on('data', (chunk: Buffer) => {
        buffer = buffer.length === 0 ? chunk : Buffer.concat([buffer, chunk]);
        for (;;) {
          if (state === 'step' || state === 'header') {
            while (buffer[0] === 0x0a) buffer = buffer.subarray(1);
            const end = buffer.indexOf('\r\n');
            if (end < 0) return;
            const line = buffer.subarray(0, end).toString('latin1');
            buffer = buffer.subarray(end + 2);
            if (state === 'step') {
              const [step] = steps.shift() ?? [''];
              if (line.startsWith('-')) return fail(`the server refused ${step}: ${line.slice(1)}`);
              if (step === 'PSYNC' && !line.startsWith('+FULLRESYNC')) return fail(`an unexpected answer to PSYNC: ${line.slice(0, 80)}`);
              const next = steps[0];
              if (next) socket.write(next[1]);
              else state = 'header';
              continue;
            }
            if (line.startsWith('$EOF:')) {
              mark = Buffer.from(line.slice(5), 'latin1');
              if (mark.length !== EOF_MARK_BYTES) return fail(`an end mark of ${mark.length} bytes`);
              state = 'eof';
            } else if (/^\$\d+$/.test(line)) {
              remaining = Number(line.slice(1));
              state = 'length';
            } else return fail(`an unexpected answer to PSYNC: ${line.slice(0, 80)}`);
          } else if (state === 'length') {
            const part = buffer.subarray(0, remaining);
            write(part);
            remaining -= part.length;
            buffer = buffer.subarray(part.length);
            if (remaining === 0) return finish('disk');
            return;
          } else {
            // Everything but the last 40 bytes is RDB for sure; the mark ends it.
            const at = buffer.indexOf(mark);
            if (at >= 0) {
              write(buffer.subarray(0, at));
              return finish('diskless');
            }
            const safe = Math.max(0, buffer.length - EOF_MARK_BYTES);
            write(buffer.subarray(0, safe));
            buffer = buffer.subarray(safe);
            return;
          }
        }
      });
      socket.write(steps[0]?.[1] ?? Buffer.alloc(0));
    });
  } finally {
    socket.destroy();
    if (!out.closed) out.destroy();
  }
}

/** A command as a RESP array of bulk strings. */
function command(...args: string[]): Buffer {
  return Buffer.concat([Buffer.from(`*${args.length}\r\n`), ...args.map((arg) => Buffer.concat([Buffer.from(`$${Buffer.byteLength(arg)}\r\n`), Buffer.from(arg), Buffer.from('\r\n')]))]);
}
