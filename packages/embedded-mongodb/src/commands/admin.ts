import { Long, UUID, type Document } from 'bson';
import { hostname } from 'node:os';
import type { Engine } from '../engine.js';
import { CommandError, ErrorCode } from '../errors.js';
import { compileFilter } from '../matching.js';
import { MAX_BSON_OBJECT_SIZE } from '../raw-bson.js';
import { MAX_MESSAGE_SIZE } from '../wire.js';
import type { CommandHandler, CommandRequest } from './request.js';

/** The MongoDB release whose wire behaviour the engine follows (wire version 21). */
export const SERVER_VERSION = '7.0.0';
const MAX_WIRE_VERSION = 21;

/**
 * A standalone server: no `setName`, writable primary. Without
 * `topologyVersion` the driver polls with `hello` instead of streaming.
 */
export function hello(_engine: Engine, request: CommandRequest): Document {
  const legacy = request.name !== 'hello';
  return {
    ...(request.body.helloOk === true ? { helloOk: true } : {}),
    ...(legacy ? { ismaster: true } : { isWritablePrimary: true }),
    maxBsonObjectSize: MAX_BSON_OBJECT_SIZE,
    maxMessageSizeBytes: MAX_MESSAGE_SIZE,
    maxWriteBatchSize: 100_000,
    localTime: new Date(),
    logicalSessionTimeoutMinutes: 30,
    connectionId: request.connectionId,
    minWireVersion: 0,
    maxWireVersion: MAX_WIRE_VERSION,
    readOnly: false,
    ok: 1,
  };
}

const buildInfo: CommandHandler = () => ({
  version: SERVER_VERSION,
  gitVersion: 'embedded',
  modules: [],
  allocator: 'system',
  javascriptEngine: 'none',
  sysInfo: 'chat-gateway embedded MongoDB-compatible engine',
  versionArray: [7, 0, 0, 0],
  bits: 64,
  debug: false,
  maxBsonObjectSize: MAX_BSON_OBJECT_SIZE,
  storageEngines: ['embedded'],
  ok: 1,
});

const PARAMETERS: Document = {
  featureCompatibilityVersion: { version: '7.0' },
  authenticationMechanisms: [],
  internalQueryFrameworkControl: 'forceClassicEngine',
};

const getParameter: CommandHandler = (_engine, request) => {
  const all = request.body.getParameter === '*';
  const wanted = all ? Object.keys(PARAMETERS) : Object.keys(request.body).filter((k) => k in PARAMETERS);
  if (wanted.length === 0) throw new CommandError(ErrorCode.InvalidOptions, 'no option found to get');
  return { ...Object.fromEntries(wanted.map((k) => [k, PARAMETERS[k]])), ok: 1 };
};

const ok: CommandHandler = () => ({ ok: 1 });

const startSession: CommandHandler = () => ({ id: { id: new UUID() }, timeoutMinutes: 30, ok: 1 });

const listDatabases: CommandHandler = (engine, request) => {
  const databases = engine.catalog.databaseNames().map((name) => {
    const sizeOnDisk = engine.catalog.collections(name).reduce((sum, c) => sum + c.dataSize, 0);
    return { name, sizeOnDisk, empty: false };
  });
  const filter = compileFilter(request.body.filter);
  const listed = databases.filter((db) => filter.test(db));
  const totalSize = listed.reduce((sum, db) => sum + db.sizeOnDisk, 0);
  if (request.body.nameOnly === true) return { databases: listed.map(({ name }) => ({ name })), ok: 1 };
  return { databases: listed, totalSize, totalSizeMb: Math.floor(totalSize / 1024 / 1024), ok: 1 };
};

const dbStats: CommandHandler = (engine, request) => {
  const collections = engine.catalog.collections(request.db);
  const objects = collections.reduce((sum, c) => sum + c.records.size, 0);
  const dataSize = collections.reduce((sum, c) => sum + c.dataSize, 0);
  return {
    db: request.db,
    collections: collections.length,
    views: 0,
    objects,
    avgObjSize: objects === 0 ? 0 : dataSize / objects,
    dataSize,
    storageSize: dataSize,
    indexes: collections.reduce((sum, c) => sum + c.indexes.length, 0),
    scaleFactor: 1,
    ok: 1,
  };
};

const dropDatabase: CommandHandler = (engine, request) => {
  engine.catalog.dropDatabase(request.db);
  return { ok: 1 };
};

const serverStatus: CommandHandler = (engine) => ({
  host: hostname(),
  version: SERVER_VERSION,
  process: 'mongod',
  pid: Long.fromNumber(process.pid),
  uptime: Math.floor((Date.now() - engine.startedAt) / 1000),
  uptimeMillis: Long.fromNumber(Date.now() - engine.startedAt),
  localTime: new Date(),
  ok: 1,
});

const connectionStatus: CommandHandler = () => ({
  authInfo: { authenticatedUsers: [], authenticatedUserRoles: [] },
  ok: 1,
});

const hostInfo: CommandHandler = () => ({
  system: { currentTime: new Date(), hostname: hostname() },
  os: { type: process.platform },
  extra: {},
  ok: 1,
});

const getCmdLineOpts: CommandHandler = () => ({ argv: ['embedded'], parsed: {}, ok: 1 });

const getLog: CommandHandler = () => ({ totalLinesWritten: 0, log: [], ok: 1 });

export const adminCommands: Record<string, CommandHandler> = {
  hello,
  isMaster: hello,
  ismaster: hello,
  ping: ok,
  buildInfo,
  buildinfo: buildInfo,
  getParameter,
  endSessions: ok,
  killSessions: ok,
  refreshSessions: ok,
  startSession,
  listDatabases,
  dbStats,
  dropDatabase,
  serverStatus,
  connectionStatus,
  hostInfo,
  getCmdLineOpts,
  getLog,
};
