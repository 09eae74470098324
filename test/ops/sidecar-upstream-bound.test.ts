import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import type { RunningSidecar } from '../../src/rest/sidecar.js';
import { startTestSidecar } from '../support/sidecar.js';

const LIMIT = 65_536;
const MiB = 1024 * 1024;
const KEY = 'sk-bounded-0123456789abcdef';

/**
 * An upstream that answers the sidecar's probe as a gateway does, and every operation with a
 * GraphQL answer that never ends, streamed without a Content-Length: what a sidecar must not read whole.
 */
class EndlessUpstream {
  readonly server: Server;
  /** Bytes of endless answers written so far, and how many of them ended because the reader went away. */
  written = 0;
  closed = 0;

  constructor() {
    this.server = createServer((request, response) => {
      let body = '';
      request.on('data', (chunk: Buffer) => (body += chunk.toString()));
      request.on('end', () => {
        response.setHeader('content-type', 'application/json');
        if (body.includes('__typename')) {
          response.end('{"data":{"__typename":"Query"}}');
          return;
        }
        response.write('{"data":{"conversation":{"messages":[{"role":"user","content":"');
        const chunk = '\\u0001'.repeat(16 * 1024);
        const more = () => {
          while (!response.destroyed && response.write(chunk)) this.written += chunk.length;
        };
        response.on('drain', more);
        response.on('close', () => (this.closed += 1));
        more();
      });
    });
  }

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/graphql`;
  }
}

let upstream: EndlessUpstream;
let sidecar: RunningSidecar;

beforeAll(async () => {
  upstream = new EndlessUpstream();
  sidecar = await startTestSidecar(await upstream.listen(), { environment: { RESPONSE_MAX_BYTES: String(LIMIT) }, timeoutMs: 60_000 });
});
afterAll(async () => {
  await sidecar?.stop();
  upstream?.server.closeAllConnections();
  await new Promise((resolve) => upstream?.server.close(resolve));
});

describe(`a sidecar whose upstream streams an answer without end (RESPONSE_MAX_BYTES=${LIMIT})`, () => {
  it('refuses it as too large once past the limit, and stops reading it', async () => {
    const answers = await Promise.all(
      [1, 2, 3, 4].map(async () => {
        const response = await fetch(`${sidecar.url}/conversation/load?id=1`, { headers: { authorization: KEY } });
        return { status: response.status, text: await response.text() };
      }),
    );
    const sentence = `the answer would be larger than ${LIMIT} bytes, the most one answer may carry: ask for fewer conversations or messages at once`;
    expect(answers).toEqual(Array.from({ length: 4 }, () => ({ status: 200, text: JSON.stringify({ status: false, message: sentence }) })));
    // Each endless answer was cut off by the sidecar going away, having been read no further than the socket buffers hold.
    await expect.poll(() => upstream.closed, { timeout: 10_000 }).toBe(4);
    expect(upstream.written).toBeLessThan(4 * 8 * MiB);
  });
});
