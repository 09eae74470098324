import { type DestinationStream, type Logger, pino } from 'pino';

import type { Config } from './config.js';

export type { Logger };

/** JSON lines on stdout, or on `destination` (tests read what was logged). */
export function createLogger(config: Pick<Config, 'logLevel'>, destination?: DestinationStream): Logger {
  const options = {
    level: config.logLevel,
    // Credentials never reach a log line, whatever a caller sends.
    redact: ['req.headers.authorization', 'req.headers.cookie'],
  };
  return destination === undefined ? pino(options) : pino(options, destination);
}
