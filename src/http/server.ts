import { createServer, type Server } from 'node:http';

import { HTTP_SERVER_LIMITS } from '../limits.js';
import { serveUpgradeRequests } from './upgrades.js';

/**
 * An HTTP server with `HTTP_SERVER_LIMITS`, serving requests that carry `Upgrade` as ordinary
 * requests unless a door takes them (`routeUpgrades`): every server of the service is made here.
 */
export function createHttpServer(): Server {
  const limits = HTTP_SERVER_LIMITS;
  const server = createServer({
    maxHeaderSize: limits.maxHeaderBytes,
    headersTimeout: limits.headersTimeoutMs,
    requestTimeout: limits.requestTimeoutMs,
    connectionsCheckingInterval: limits.timeoutCheckIntervalMs,
  });
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  server.maxConnections = limits.maxConnections;
  serveUpgradeRequests(server);
  return server;
}
