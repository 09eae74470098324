import { pino, type Logger } from 'pino';
import type { Config } from './config.js';

export type { Logger };

export function createLogger(config: Pick<Config, 'logLevel'>): Logger {
  return pino({
    level: config.logLevel,
    // Credentials never reach a log line, whatever a caller sends.
    redact: ['req.headers.authorization', 'req.headers.cookie'],
  });
}
