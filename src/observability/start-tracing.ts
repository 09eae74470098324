import type { TracingConfig } from '../config.js';
import type { Logger } from '../logger.js';
import { NO_TRACING, type TracedService, type Tracing } from './tracing.js';

/**
 * Traces as configured: `NO_TRACING` without an endpoint; with one, the OpenTelemetry SDK, loaded
 * only then (its own troubles are logged as warnings). One traced service per process: the SDK
 * registers itself globally.
 */
export async function startTracing(config: TracingConfig | undefined, service: TracedService, logger: Logger): Promise<Tracing> {
  if (config === undefined) return NO_TRACING;
  const { openTelemetryTracing } = await import('./open-telemetry.js');
  return openTelemetryTracing(config, service, logger);
}
