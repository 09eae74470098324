import { Catalog } from './catalog.js';
import { CursorRegistry } from './cursors.js';
import { FailPoints } from './fail-points.js';
import type { IndexBuildStats } from './indexes.js';
import { type Clock, ClusterClock, Oplog } from './oplog.js';
import { RetryableWrites } from './sessions.js';
import type { Storage } from './storage.js';
import { TtlMonitor } from './ttl.js';

export interface EngineOptions {
  /** The replica set this server is the only member of; undefined: a standalone server. */
  replicaSet: string | undefined;
  clock: Clock;
  ttlMonitorIntervalMs: number;
  oplogSizeBytes: number;
  /** mongod's enableTestCommands: configureFailPoint exists only then. */
  enableTestCommands: boolean;
  /** The data directory the data lasts in (opened, its contents restored here); undefined: in memory. */
  storage?: Storage;
}

/** What the server remembers of one open connection. */
export interface ConnectionState {
  /** The application name its first hello declared ('' when none). */
  appName: string;
}

/** The state one server serves: data, open cursors, the oplog and sessions. */
export class Engine {
  readonly catalog: Catalog;
  readonly cursors: CursorRegistry;
  readonly startedAt = Date.now();
  readonly clock: Clock;
  readonly replicaSet: string | undefined;
  /** Every committed change, for change streams and awaitData cursors (a standalone keeps only the latest). */
  readonly oplog: Oplog;
  readonly clusterClock: ClusterClock;
  readonly retryableWrites = new RetryableWrites();
  readonly ttl: TtlMonitor;
  /** Index builds, as serverStatus reports them. */
  readonly indexBuilds: IndexBuildStats = { total: 0, phases: { scanCollection: 0, commit: 0 } };
  /** The address clients reach this server at (host:port or socket path), set once listening. */
  address = '';
  readonly enableTestCommands: boolean;
  readonly failPoints = new FailPoints();
  /** Open connections by id. */
  readonly connections = new Map<number, ConnectionState>();
  /** Where the data lasts; undefined in memory. */
  readonly storage: Storage | undefined;

  constructor(options: EngineOptions) {
    this.clock = options.clock;
    this.replicaSet = options.replicaSet;
    this.enableTestCommands = options.enableTestCommands;
    this.clusterClock = new ClusterClock(options.clock);
    this.storage = options.storage;
    const restored = this.storage?.load();
    this.oplog = new Oplog(
      this.clusterClock,
      options.clock,
      options.replicaSet === undefined ? 0 : options.oplogSizeBytes,
      this.storage,
      restored,
    );
    this.catalog = new Catalog(this.oplog, this.storage);
    if (restored) this.catalog.restore(restored);
    this.cursors = new CursorRegistry((ms) => this.oplog.waitForChange(ms));
    this.ttl = new TtlMonitor(this.catalog, options.clock, options.ttlMonitorIntervalMs);
  }

  close(): void {
    this.cursors.close();
    this.ttl.close();
    this.oplog.close();
  }
}
