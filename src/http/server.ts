import { createServer, IncomingMessage, type Server, ServerResponse } from 'node:http';

import express, { type Express } from 'express';

import type { TrustProxy } from '../config.js';
import { HTTP_SERVER_LIMITS } from '../limits.js';
import { serveUpgradeRequests } from './upgrades.js';

/** An Express app with the settings every app of the service has, before any step. */
export function expressApp(trustProxy: TrustProxy): Express {
  const app = express();
  app.disable('x-powered-by');
  // Every answer is no-store: an ETag would serve no cache, and cost a hash of each body.
  app.disable('etag');
  app.set('trust proxy', trustProxy);
  return app;
}

/**
 * An HTTP server with `HTTP_SERVER_LIMITS` for `app`, serving requests that carry `Upgrade` as
 * ordinary requests unless a door takes them (`routeUpgrades`): every server of the service is
 * made here. The caller hands its requests to the app.
 *
 * Its requests and responses are made as the app's from the start (Node's `IncomingMessage` and
 * `ServerResponse` options): Express gives every request its app's prototypes
 * (`Object.setPrototypeOf` in `app.handle`), which then changes nothing. Changing a live object's
 * prototype made V8 keep each request and all it reached through young-generation collections
 * until a full one: about 70% of what a request allocated survived them, and scavenges copied
 * megabytes each (`test/bench/allocations.ts`; docs/performance.md).
 */
export function createHttpServer(app: Pick<Express, 'request' | 'response'>): Server {
  const limits = HTTP_SERVER_LIMITS;
  const server = createServer({
    maxHeaderSize: limits.maxHeaderBytes,
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    connectionsCheckingInterval: limits.timeoutCheckIntervalMs,
    IncomingMessage: madeAs(IncomingMessage, app.request),
    ServerResponse: madeAs(ServerResponse, app.response),
  });
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  server.maxConnections = limits.maxConnections;
  serveUpgradeRequests(server);
  return server;
}

/**
 * A constructor of `base`'s objects whose prototype is `prototype` (which extends `base.prototype`),
 * in the way Node's own HTTP classes extend one another (`ServerResponse` calls `OutgoingMessage`
 * on its new object): V8 builds such objects as fast as `base`'s. A constructor made with
 * `Reflect.construct` and another new target cost about 50 µs a request in a profile of a load.
 */
function madeAs<T extends abstract new (...args: never[]) => object>(base: T, prototype: object): T {
  function Made(this: object, first: unknown, second: unknown): void {
    (base as unknown as (this: object, first: unknown, second: unknown) => void).call(this, first, second);
  }
  Made.prototype = prototype;
  return Made as unknown as T;
}
