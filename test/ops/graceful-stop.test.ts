import { request } from 'node:http';

import { describe, expect, it } from 'vitest';

import type { Clock } from '../../src/clock.js';
import { withDatabaseName } from '../../src/db/uri.js';
import { startEmbeddedDbProcess } from '../support/embedded-db-process.js';
import { eventually } from '../support/eventually.js';
import { graphql, startTestGateway } from '../support/gateway.js';
import { startTestSidecar } from '../support/sidecar.js';

/** Holds every scheduled callback until the test releases it: time moves only when told. */
class HeldClock implements Clock {
  readonly held: { callback: () => unknown; delayMs: number }[] = [];

  now(): number {
    return Date.now();
  }

  schedule(callback: () => unknown, delayMs: number): () => void {
    this.held.push({ callback, delayMs });
    return () => undefined;
  }

  release(): void {
    for (const { callback } of this.held.splice(0)) callback();
  }
}

/** Starts a POST whose body is still arriving; `finish()` sends the rest, `answer` settles with the response. */
function slowRequest(url: string, authorization: string, firstPart: string) {
  // `Expect: 100-continue` makes the server say when it has read the headers: from then on the request is under way.
  const outgoing = request(url, { method: 'POST', headers: { authorization, 'content-type': 'application/json', expect: '100-continue' } });
  const answer = new Promise<{ status: number; body: string }>((resolve, reject) => {
    outgoing.on('response', (response) => {
      let body = '';
      response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve({ status: response.statusCode!, body }));
    });
    outgoing.on('error', reject);
  });
  const started = new Promise<void>((resolve) => outgoing.once('continue', resolve)).then(() => void outgoing.write(firstPart));
  outgoing.flushHeaders();
  return { answer, started, finish: (rest: string) => outgoing.end(rest) };
}

const statuses = (responses: Response[]) => responses.map((response) => response.status);

describe.each(['gateway', 'sidecar'] as const)('stopping the %s', (server) => {
  it('turns /readyz to 503 at once, answers every request sent just before and during the delay, then closes the port', async () => {
    const scheduler = new HeldClock();
    const environment = { SHUTDOWN_DELAY_MS: '5000' };
    const gateway = await startTestGateway(server === 'gateway' ? environment : {}, server === 'gateway' ? { clock: scheduler } : {});
    const sidecar = server === 'sidecar' ? await startTestSidecar(`${gateway.url}/graphql`, { clock: scheduler, environment }) : undefined;
    const url = sidecar?.url ?? gateway.url;
    await gateway.seed({ users: [{ id: 1, username: 'alice', quota: 12.5 }] });
    const authorization = `Bearer ${await gateway.token(1)}`;
    const quota = () => fetch(`${url}/quota`, { headers: { authorization } });
    try {
      expect((await fetch(`${url}/readyz`)).status).toBe(200);
      const justBefore = Array.from({ length: 20 }, quota);
      const stopped = (sidecar ?? gateway).stop();

      const readiness = await fetch(`${url}/readyz`);
      expect(readiness.status).toBe(503);
      expect(await readiness.json()).toEqual(
        server === 'gateway' ? { status: 'stopping', websockets: 0, subscriptions: 0 } : { status: 'stopping' },
      );
      expect(scheduler.held.map(({ delayMs }) => delayMs)).toEqual([5000]);
      const during = await Promise.all(Array.from({ length: 20 }, quota));
      expect(statuses(during)).toEqual(Array(20).fill(200));
      expect(statuses(await Promise.all(justBefore))).toEqual(Array(20).fill(200));
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      const inFlight = slowRequest(
        server === 'gateway' ? `${url}/graphql` : `${url}/buy`,
        authorization,
        server === 'gateway' ? '{"query":"{ quota' : '{"quo',
      );

      await inFlight.started;
      scheduler.release();
      // The port closes once the delay is over.
      await eventually(
        () =>
          fetch(`${url}/healthz`).then(
            () => undefined,
            () => true,
          ),
        2_000,
        'the port to close',
      );
      inFlight.finish(server === 'gateway' ? ' }"}' : 'ta":5}');
      expect((await inFlight.answer).status).toBe(200);
      await stopped;
      if (server === 'gateway') expect(gateway.database.connection.readyState).toBe(0);
    } finally {
      if (server === 'sidecar') await gateway.stop();
      else await gateway.testDatabase.stop();
    }
  });
});

describe('a stop while the database does not answer', () => {
  it('completes and lets the database connection go, though nothing answers on its sockets', async () => {
    const database = await startEmbeddedDbProcess();
    try {
      const gateway = await startTestGateway({ MONGODB_URI: withDatabaseName(database.uri, 'gone-before-stop') });
      await gateway.seed({ users: [{ id: 1, username: 'alice', quota: 1 }] });
      const authorization = `Bearer ${await gateway.token(1)}`;
      expect((await graphql(gateway, '{ quota }', { authorization })).body.data).toEqual({ quota: 1 });
      // Frozen, not closed: its sockets stay open and nothing answers on them.
      database.pause();
      await gateway.stop();
      expect(gateway.database.connection.readyState).toBe(0);
    } finally {
      await database.stop();
    }
  }, 20_000);
});
