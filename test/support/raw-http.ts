import { connect } from 'node:net';
import { setImmediate as nextTurn } from 'node:timers/promises';

/** One HTTP/1.1 response as it came over the wire. */
export interface RawResponse {
  status: number;
  /** Header names in lower case. */
  headers: Record<string, string>;
  body: string;
}

/** A request written byte for byte: the request line, exactly these header fields, and the body. */
export function rawRequest(method: string, target: string, headers: [string, string][], body = ''): string {
  const fields = headers.map(([name, value]) => `${name}: ${value}\r\n`).join('');
  return `${method} ${target} HTTP/1.1\r\n${fields}\r\n${body}`;
}

/** One client connection, kept open: requests are written on it and its responses read in order. */
export interface RawConnection {
  /** The connection's port on this side: the server sees it as the remote port. */
  localPort: number;
  /**
   * Writes each of `writes` in its own turn of the event loop (so that the server may read them
   * apart), and resolves with the next `responses` responses, or fewer if the server closes first
   * or `withinMs` (when given) runs out first.
   */
  exchange(writes: string[], responses: number, withinMs?: number): Promise<RawResponse[]>;
  close(): void;
}

/** Connects to `url`'s host and port. Bodies are read by Content-Length or chunked coding. */
export async function openConnection(url: string): Promise<RawConnection> {
  const { hostname, port } = new URL(url);
  const socket = connect(Number(port), hostname);
  let answers: RawResponse[] = [];
  let received = Buffer.alloc(0);
  let failure: Error | undefined;
  let waiting: { responses: number; resolve: () => void; reject: (error: Error) => void } | undefined;
  const settle = () => {
    if (waiting === undefined) return;
    if (failure !== undefined) waiting.reject(failure);
    else if (socket.closed || answers.length >= waiting.responses) waiting.resolve();
  };
  socket.on('data', (chunk: Buffer) => {
    received = Buffer.concat([received, chunk]);
    for (let parsed = parseResponse(received); parsed !== undefined; parsed = parseResponse(received)) {
      answers.push(parsed.response);
      received = received.subarray(parsed.length);
    }
    settle();
  });
  socket.on('error', (error) => (failure = error));
  socket.once('close', settle);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  return {
    localPort: socket.localPort!,
    async exchange(writes, responses, withinMs) {
      const done = new Promise<void>((resolve, reject) => (waiting = { responses, resolve, reject }));
      const timer = withinMs === undefined ? undefined : setTimeout(() => waiting?.resolve(), withinMs);
      for (const write of writes) {
        socket.write(write);
        await nextTurn();
      }
      settle();
      await done.finally(() => {
        clearTimeout(timer);
        waiting = undefined;
      });
      const taken = answers.slice(0, responses);
      answers = answers.slice(responses);
      return taken;
    },
    close: () => socket.destroy(),
  };
}

/** Opens one connection to `url`, exchanges `writes` for `responses` responses on it (see `RawConnection`), and closes it. */
export async function exchange(url: string, writes: string[], responses: number, withinMs?: number): Promise<RawResponse[]> {
  const connection = await openConnection(url);
  try {
    return await connection.exchange(writes, responses, withinMs);
  } finally {
    connection.close();
  }
}

/** The first complete response in `data` and how many bytes it took, or undefined while it is incomplete. */
function parseResponse(data: Buffer): { response: RawResponse; length: number } | undefined {
  const headEnd = data.indexOf('\r\n\r\n');
  if (headEnd === -1) return undefined;
  const [statusLine, ...fields] = data.subarray(0, headEnd).toString('latin1').split('\r\n');
  const headers = Object.fromEntries(
    fields.map((field) => [field.slice(0, field.indexOf(':')).toLowerCase(), field.slice(field.indexOf(':') + 1).trim()]),
  );
  const status = Number(statusLine!.split(' ')[1]);
  const bodyStart = headEnd + 4;
  const body = headers['transfer-encoding'] === 'chunked' ? dechunk(data.subarray(bodyStart)) : fixedBody(data, bodyStart, headers);
  if (body === undefined) return undefined;
  return { response: { status, headers, body: body.text }, length: bodyStart + body.length };
}

function fixedBody(data: Buffer, start: number, headers: Record<string, string>): { text: string; length: number } | undefined {
  const length = Number(headers['content-length'] ?? 0);
  if (data.length < start + length) return undefined;
  return { text: data.subarray(start, start + length).toString('utf8'), length };
}

function dechunk(data: Buffer): { text: string; length: number } | undefined {
  const parts: Buffer[] = [];
  let offset = 0;
  for (;;) {
    const lineEnd = data.indexOf('\r\n', offset);
    if (lineEnd === -1) return undefined;
    const size = Number.parseInt(data.subarray(offset, lineEnd).toString('latin1'), 16);
    const chunkEnd = lineEnd + 2 + size;
    if (data.length < chunkEnd + 2) return undefined;
    if (size === 0) return { text: Buffer.concat(parts).toString('utf8'), length: chunkEnd + 2 };
    parts.push(data.subarray(lineEnd + 2, chunkEnd));
    offset = chunkEnd + 2;
  }
}
