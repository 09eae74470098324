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
 * Its requests and responses are made as the app's from the start: the server's `IncomingMessage`
 * and `ServerResponse` options are subclasses of Node's (as Node documents them, "useful for
 * extending the original") whose prototypes become the app's `request` and `response`. Express
 * gives every request its app's prototypes (`Object.setPrototypeOf` in `app.handle`), which then
 * changes nothing. Changing a live object's prototype made V8 keep each request and all it
 * reached through young-generation collections until a full one: about 70% of what a request
 * allocated survived them, and scavenges copied megabytes each (`test/bench/allocations.ts`;
 * docs/performance.md).
 */
export function createHttpServer(app: Pick<Express, 'request' | 'response'>): Server {
  const limits = HTTP_SERVER_LIMITS;
  const server = createServer({
    maxHeaderSize: limits.maxHeaderBytes,
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    connectionsCheckingInterval: limits.timeoutCheckIntervalMs,
    IncomingMessage: appClass(app, 'request', IncomingMessage),
    ServerResponse: appClass(app, 'response', ServerResponse),
  });
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  server.maxConnections = limits.maxConnections;
  serveUpgradeRequests(server);
  return server;
}

/**
 * A subclass of `base` whose prototype becomes the app's `request` or `response`: it inherits
 * what the app's did (Express's methods) and holds its own properties (its `app`). A class that
 * extends Node's lets V8 size its objects from Node's constructor, as for Node's own: a plain
 * function calling Node's constructor left a response with most of its fields outside the
 * object, and Node's symbol-keyed stores then turned it into a dictionary (slow lookups, 2.4 kB
 * more per response); `Reflect.construct` with another new target was slow to construct.
 */
function appClass<C extends new (...args: never[]) => object>(
  app: Pick<Express, 'request' | 'response'>,
  key: 'request' | 'response',
  base: C,
): C {
  const prototype: object = app[key];
  const Made = class extends (base as new (...args: never[]) => object) {};
  Object.setPrototypeOf(Made.prototype, Object.getPrototypeOf(prototype) as object);
  Object.defineProperties(Made.prototype, Object.getOwnPropertyDescriptors(prototype));
  Object.defineProperty(Made.prototype, 'constructor', { value: Made, writable: true, configurable: true });
  (app as Record<typeof key, object>)[key] = Made.prototype;
  return Made as unknown as C;
}
