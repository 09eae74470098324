import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

import type { Database } from '../db/database.js';
import { childrenPerLabelSet } from './metric-children.js';

const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
/** How long a scrape waits for the database's answer to its ping. */
const PING_TIMEOUT_MS = 1_000;

/**
 * Whether the database answers a ping at scrape time (the driver's own view lags by up to a
 * heartbeat), and the count and duration of every command the stores send (`DatabaseCommands`).
 * Returns a function that stops observing.
 */
export function databaseMetrics(registry: Registry, database: Pick<Database, 'ping' | 'commands'>): () => void {
  new Gauge({
    name: 'mongodb_up',
    help: '1 when the database answered a ping during this scrape, 0 otherwise',
    registers: [registry],
    async collect() {
      this.set(
        await database.ping(PING_TIMEOUT_MS).then(
          () => 1,
          () => 0,
        ),
      );
    },
  });
  const commands = new Counter({
    name: 'mongodb_commands_total',
    help: 'Database commands the stores sent, by command name and result',
    labelNames: ['command', 'result'] as const,
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'mongodb_command_duration_seconds',
    help: 'Duration of database commands as the stores waited for them (a pooled connection and a retry included), by command name',
    labelNames: ['command'] as const,
    buckets: DURATION_BUCKETS,
    registers: [registry],
  });

  // Command names are the few the service sends; a series appears with its first command.
  const countOf = childrenPerLabelSet((command: string, result: string) => commands.labels(command, result));
  const durationOf = childrenPerLabelSet((command: string) => duration.labels(command));
  return database.commands.observe((command, result, seconds) => {
    countOf(command, result).inc();
    durationOf(command).observe(seconds);
  });
}
