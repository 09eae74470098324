import { hostname } from 'node:os';

import { type Document, Long, ObjectId, UUID } from 'bson';

import type { Engine } from '../engine.js';
import { CommandError, ErrorCode, refusal } from '../errors.js';
import { compileFilter } from '../matcher.js';
import { MAX_BSON_OBJECT_SIZE } from '../raw-bson.js';
import { isNumber, numberOf } from '../values.js';
import { MAX_MESSAGE_SIZE } from '../wire.js';
import type { CommandHandler, CommandRequest } from './request.js';

/** The MongoDB release whose wire behaviour the engine follows (wire version 21). */
export const SERVER_VERSION = '7.0.0';
const MAX_WIRE_VERSION = 21;

/** The election this single member won when it started, as a primary reports it. */
const ELECTION_ID = new ObjectId('7fffffff0000000000000001');

/**
 * The handshake. A replica set member (the default) names its set, itself as
 * the only host and the primary, as mongod does after `rs.initiate()`; a
 * standalone names no set. Without `topologyVersion` the driver polls with
 * `hello` instead of streaming.
 */
export function hello(engine: Engine, request: CommandRequest): Document {
  const legacy = request.name !== 'hello';
  const replicaSet = engine.replicaSet === undefined ? {} : replicaSetFields(engine);
  return {
    ...(request.body.helloOk === true ? { helloOk: true } : {}),
    ...(legacy ? { ismaster: true } : { isWritablePrimary: true }),
    ...replicaSet,
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

function replicaSetFields(engine: Engine): Document {
  const time = engine.oplog.latest();
  const opTime = { ts: time, t: Long.fromNumber(1) };
  const date = new Date(time.high * 1000);
  return {
    hosts: [engine.address],
    setName: engine.replicaSet,
    setVersion: 1,
    secondary: false,
    primary: engine.address,
    me: engine.address,
    electionId: ELECTION_ID,
    lastWrite: { opTime, lastWriteDate: date, majorityOpTime: opTime, majorityWriteDate: date },
  };
}

/** replSetGetStatus: the one member, healthy and primary. */
const replSetGetStatus: CommandHandler = (engine) => {
  if (engine.replicaSet === undefined) throw new CommandError(ErrorCode.NoReplicationEnabled, 'not running with --replSet');
  const time = engine.oplog.latest();
  const opTime = { ts: time, t: Long.fromNumber(1) };
  return {
    set: engine.replicaSet,
    date: new Date(),
    myState: 1,
    term: Long.fromNumber(1),
    heartbeatIntervalMillis: Long.fromNumber(2000),
    optimes: { lastCommittedOpTime: opTime, appliedOpTime: opTime, durableOpTime: opTime },
    members: [
      {
        _id: 0,
        name: engine.address,
        health: 1,
        state: 1,
        stateStr: 'PRIMARY',
        uptime: Math.floor((Date.now() - engine.startedAt) / 1000),
        optime: opTime,
        optimeDate: new Date(time.high * 1000),
        electionId: ELECTION_ID,
        self: true,
      },
    ],
    ok: 1,
  };
};

const buildInfo: CommandHandler = () => ({
  version: SERVER_VERSION,
  gitVersion: 'embedded',
  modules: [],
  allocator: 'system',
  javascriptEngine: 'none',
  sysInfo: 'embedded MongoDB-compatible engine (in memory)',
  versionArray: [7, 0, 0, 0],
  bits: 64,
  debug: false,
  maxBsonObjectSize: MAX_BSON_OBJECT_SIZE,
  storageEngines: ['embedded'],
  ok: 1,
});

function parameters(engine: Engine): Document {
  return {
    featureCompatibilityVersion: { version: '7.0' },
    authenticationMechanisms: [],
    internalQueryFrameworkControl: 'forceClassicEngine',
    ttlMonitorEnabled: engine.ttl.enabled,
    ttlMonitorSleepSecs: engine.ttl.interval / 1000,
  };
}

const getParameter: CommandHandler = (engine, request) => {
  const all = parameters(engine);
  const wanted = request.body.getParameter === '*' ? Object.keys(all) : Object.keys(request.body).filter((k) => k in all);
  if (wanted.length === 0) throw new CommandError(ErrorCode.InvalidOptions, 'no option found to get');
  return { ...Object.fromEntries(wanted.map((k) => [k, all[k]])), ok: 1 };
};

/** setParameter: the TTL monitor's settings can change at run time, as mongod's can; other parameters are refused. */
const setParameter: CommandHandler = (engine, request) => {
  if (request.db !== 'admin') throw new CommandError(ErrorCode.Unauthorized, 'setParameter may only be run against the admin database.');
  const changes = Object.entries(request.body).filter(
    ([name]) => !['setParameter', '$db', 'lsid', '$clusterTime', '$readPreference', 'comment'].includes(name),
  );
  if (changes.length === 0) throw new CommandError(ErrorCode.NoSuchKey, 'no option found to set, use help:true to see options ');
  const was: Document = {};
  for (const [name, value] of changes) {
    if (name === 'ttlMonitorSleepSecs') {
      if (!isNumber(value) || numberOf(value) < 1)
        throw new CommandError(ErrorCode.BadValue, `Invalid value for parameter ttlMonitorSleepSecs: ${String(value)}`);
      was.was = engine.ttl.interval / 1000;
      engine.ttl.setInterval(numberOf(value) * 1000);
    } else if (name === 'ttlMonitorEnabled') {
      if (typeof value !== 'boolean')
        throw new CommandError(ErrorCode.BadValue, `Invalid value for parameter ttlMonitorEnabled: ${String(value)}`);
      was.was = engine.ttl.enabled;
      engine.ttl.enabled = value;
    } else {
      throw refusal(ErrorCode.InvalidOptions, `the server parameter '${name}'`);
    }
  }
  return { ...was, ok: 1 };
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

const serverStatus: CommandHandler = (engine) => ({
  host: hostname(),
  version: SERVER_VERSION,
  process: 'mongod',
  pid: Long.fromNumber(process.pid),
  uptime: Math.floor((Date.now() - engine.startedAt) / 1000),
  uptimeMillis: Long.fromNumber(Date.now() - engine.startedAt),
  localTime: new Date(),
  indexBuilds: engine.indexBuilds,
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
  setParameter,
  replSetGetStatus,
  endSessions: ok,
  killSessions: ok,
  refreshSessions: ok,
  startSession,
  listDatabases,
  dbStats,
  serverStatus,
  connectionStatus,
  hostInfo,
  getCmdLineOpts,
  getLog,
};
