import { type IncomingHttpHeaders, request as httpRequest } from 'node:http';

export interface RawAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  /** Milliseconds from sending to the end of the answer. */
  elapsedMs: number;
}

export interface RawRequest {
  method?: string;
  /** Sent exactly as given, query string included. */
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Another loopback address (127.0.0.2 …) stands for another client host. */
  localAddress?: string;
}

/**
 * One HTTP request with node:http, which (unlike fetch) can send oversized headers,
 * raw paths and bodies on any method, from a chosen local address.
 */
export function send(baseUrl: string, init: RawRequest): Promise<RawAnswer> {
  const url = new URL(baseUrl);
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      {
        host: url.hostname,
        port: url.port,
        method: init.method ?? 'GET',
        path: init.path,
        headers: { ...(init.body === undefined ? {} : { 'content-length': Buffer.byteLength(init.body) }), ...init.headers },
        localAddress: init.localAddress,
        agent: false,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () =>
          resolve({
            status: response.statusCode ?? 0,
            headers: response.headers,
            text: Buffer.concat(chunks).toString('utf8'),
            elapsedMs: performance.now() - started,
          }),
        );
        response.on('error', reject);
      },
    );
    // The server may answer (413, 431) and close before reading all of a large request.
    request.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE' && error.code !== 'ECONNRESET') reject(error);
    });
    request.end(init.body);
  });
}

/** A POST of one GraphQL operation as JSON. */
export function postGraphql(
  baseUrl: string,
  body: unknown,
  options: { authorization?: string; headers?: Record<string, string>; localAddress?: string } = {},
): Promise<RawAnswer> {
  return send(baseUrl, {
    method: 'POST',
    path: '/graphql',
    headers: {
      'content-type': 'application/json',
      ...(options.authorization === undefined ? {} : { authorization: options.authorization }),
      ...options.headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    ...(options.localAddress === undefined ? {} : { localAddress: options.localAddress }),
  });
}

export function json(answer: RawAnswer): any {
  return JSON.parse(answer.text);
}
