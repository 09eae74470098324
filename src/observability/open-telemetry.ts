import type { RequestListener } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';

import {
  type Attributes,
  type Context,
  context,
  diag,
  DiagLogLevel,
  type Link,
  propagation,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type TextMapGetter,
  type TextMapPropagator,
  type TextMapSetter,
  trace,
  TraceFlags,
  type Tracer,
} from '@opentelemetry/api';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { defaultResource, detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import {
  AlwaysOffSampler,
  AlwaysOnSampler,
  BatchSpanProcessor,
  ParentBasedSampler,
  type Sampler,
  type SpanExporter,
  TraceIdRatioBasedSampler,
} from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import type { Request, Response } from 'express';
import type { CommandFailedEvent, CommandStartedEvent, CommandSucceededEvent, MongoClient } from 'mongodb';

import type { SamplerConfig, TracingConfig } from '../config.js';
import type { Logger } from '../logger.js';
import { whenRequestEnds } from './request-end.js';
import { QUIET_ROUTES } from './request-log.js';
import type { OperationTracer, PurchaseTracing, SpanIds, TracedService, Tracing } from './tracing.js';

/** The methods HTTP spans name as they are; any other is `_OTHER`, so that a caller cannot make up span names. */
const KNOWN_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'CONNECT', 'TRACE']);
/** An operation's span until its operation is known; it keeps this name when none is (unparsable, invalid). */
const UNRESOLVED_OPERATION_SPAN = 'GraphQL Operation';
const W3C_TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
/** How long a stop waits for the last spans to leave: a collector that does not answer must not hold up the stop. */
const FLUSH_ON_STOP_MS = 2_000;

/**
 * The OpenTelemetry SDK for Node, exporting over OTLP/HTTP (protobuf unless `http/json`). It reads
 * the standard `OTEL_*` variables itself: the endpoint and headers (the exporter), the batch
 * schedule and limits (the tracer provider), the service name and resource attributes. The
 * propagators and the sampler come from the configuration: the gateway is a public edge, so what
 * callers send in trace headers is trusted less than the SDK's defaults trust it (`edgePropagator`,
 * `samplerOf`).
 *
 * Spans of requests are made here rather than by the `http` and `mongodb` instrumentations: those
 * patch modules as they are loaded, which under ESM happens before any configuration is read, and
 * they record raw query strings, client addresses and statements. Calls made with `fetch` (the SSO
 * provider, the sidecar's upstream) are spans of the official undici instrumentation, which hooks
 * Node's diagnostics channels and sends `traceparent`.
 */
export async function openTelemetryTracing(config: TracingConfig, service: TracedService, logger: Logger): Promise<Tracing> {
  diag.setLogger(diagnosticsTo(logger), DiagLogLevel.WARN);
  const resource = defaultResource()
    .merge(resourceFromAttributes({ 'service.name': service.name, 'service.version': service.version }))
    .merge(detectResources({ detectors: [envDetector] }));
  const provider = new NodeTracerProvider({
    resource,
    sampler: samplerOf(config.sampler),
    spanProcessors: [new BatchSpanProcessor(await exporterFor(config))],
  });
  // The context manager (AsyncLocalStorage) and the propagator, for the whole process.
  provider.register({ propagator: edgePropagator(config.propagators) });
  const stopInstrumentations = registerInstrumentations({
    tracerProvider: provider,
    // Provider calls made outside any traced work (the sidecar's readiness probes) are not traced.
    instrumentations: [new UndiciInstrumentation({ requireParentforSpans: true })],
  });
  const tracer = provider.getTracer(service.name, service.version);
  return {
    serveRequests: (listener) => serverSpans(tracer, listener),
    operations: operationSpans(tracer),
    purchases: purchaseSpans(tracer),
    traceDatabaseCommands: (client) => commandSpans(tracer, client),
    activeSpanIds,
    async shutdown() {
      stopInstrumentations();
      await Promise.race([provider.shutdown(), sleep(FLUSH_ON_STOP_MS, undefined, { ref: false })]);
    },
  };
}

async function exporterFor(config: TracingConfig): Promise<SpanExporter> {
  if (config.protocol === 'http/json') return new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter();
  return new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter();
}

/**
 * What crosses the process's edges in trace headers, in and out: W3C trace context as
 * `TraceparentOnly` takes it and, only when the operator asks for it, W3C baggage (whatever a
 * caller puts there then reaches the provider). None: no trace header is read or sent.
 */
function edgePropagator(propagators: TracingConfig['propagators']): TextMapPropagator | null {
  if (propagators.length === 0) return null;
  return new CompositePropagator({
    propagators: propagators.map((name) => (name === 'tracecontext' ? new TraceparentOnly() : new W3CBaggagePropagator())),
  });
}

/**
 * W3C trace context as a public edge takes it: a caller's `traceparent` is continued (its trace
 * id, and its span as the parent), its `tracestate` is never read. That is vendor state another
 * system wrote, which every span of the request, and the `traceparent` of every call it makes,
 * would otherwise carry on to the provider. Calls out carry the gateway's own `traceparent`.
 */
class TraceparentOnly implements TextMapPropagator {
  private readonly w3c = new W3CTraceContextPropagator();

  inject(context: Context, carrier: unknown, setter: TextMapSetter): void {
    this.w3c.inject(context, carrier, setter);
  }

  extract(context: Context, carrier: unknown, getter: TextMapGetter): Context {
    return this.w3c.extract(context, carrier, {
      keys: (from) => getter.keys(from),
      get: (from, key) => (key === TRACE_STATE_HEADER ? undefined : getter.get(from, key)),
    });
  }

  fields(): string[] {
    return ['traceparent'];
  }
}

const TRACE_STATE_HEADER = 'tracestate';

/**
 * The sampler `OTEL_TRACES_SAMPLER` names, except that a caller's sampled flag is never followed:
 * a `parentbased_` sampler follows the parent spans of this process, and decides a caller's trace
 * as it decides a new one. So a caller can neither leave its requests out of the traces (`-00`) nor
 * have them all recorded (`-01`) when the operator samples a share, and the provider is told the
 * gateway's decision. `traceidratio` decides by the trace id, which a caller may choose.
 */
function samplerOf({ name, ratio }: SamplerConfig): Sampler {
  const decide = name.endsWith('always_on')
    ? new AlwaysOnSampler()
    : name.endsWith('always_off')
      ? new AlwaysOffSampler()
      : new TraceIdRatioBasedSampler(ratio);
  if (!name.startsWith('parentbased_')) return decide;
  return new ParentBasedSampler({ root: decide, remoteParentSampled: decide, remoteParentNotSampled: decide });
}

/** The SDK's own troubles (a collector that cannot be reached) as warnings in the service's log. */
function diagnosticsTo(logger: Logger) {
  const warn = (message: string) => logger.warn({ component: 'opentelemetry' }, message);
  const ignore = () => {};
  return { error: warn, warn, info: ignore, debug: ignore, verbose: ignore };
}

/**
 * Each request a server span, continuing the caller's `traceparent`, named after the route it
 * matched (`GET /conversation/list`): never its raw path or query string, which may carry what the
 * caller sent. Probes and scrapes are not traced, as they are not logged.
 */
function serverSpans(tracer: Tracer, listener: RequestListener): RequestListener {
  return (request, response) => {
    if (QUIET_ROUTES.has(request.url?.split('?', 1)[0] ?? '')) return listener(request, response);
    const method = KNOWN_METHODS.has(request.method ?? '') ? request.method! : '_OTHER';
    const parent = propagation.extract(ROOT_CONTEXT, request.headers);
    const attributes = { 'http.request.method': method, 'url.scheme': 'http' };
    const span = tracer.startSpan(method, { kind: SpanKind.SERVER, attributes }, parent);
    whenRequestEnds(request as Request, response as Response, ({ route, status }) => {
      if (route.startsWith('/')) span.updateName(`${method} ${route}`).setAttribute('http.route', route);
      span.setAttribute('http.response.status_code', status);
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    });
    context.with(trace.setSpan(parent, span), () => listener(request, response));
  };
}

/** One span per GraphQL operation, a child of the request's (if any), named `query ListConversations` once resolved. */
function operationSpans(tracer: Tracer): OperationTracer {
  return {
    start(door, ownTrace = false) {
      const parent = ownTrace ? ROOT_CONTEXT : context.active();
      const span = tracer.startSpan(UNRESOLVED_OPERATION_SPAN, { attributes: { 'gateway.door': door } }, parent);
      const inside = trace.setSpan(parent, span);
      return {
        named(type, name) {
          span.updateName(name === undefined ? type : `${type} ${name}`).setAttribute('graphql.operation.type', type);
          if (name !== undefined) span.setAttribute('graphql.operation.name', name);
        },
        within: (work) => context.with(inside, work),
        end(errorCodes) {
          if (errorCodes.length > 0) {
            for (const code of errorCodes) span.addEvent('graphql.error', { 'graphql.error.code': code });
            span.setStatus({ code: SpanStatusCode.ERROR, message: [...new Set(errorCodes)].join(', ') });
          }
          span.end();
        },
      };
    },
  };
}

/**
 * A span per database command sent on behalf of traced work (a request, a settlement), from the
 * driver's command monitoring: its name and collection, never the command's values. Commands
 * without such work (change-stream polls, index builds at start) are not traced.
 */
function commandSpans(tracer: Tracer, client: MongoClient): void {
  const open = new Map<number, Span>();
  client.on('commandStarted', (event: CommandStartedEvent) => {
    const parent = context.active();
    if (trace.getSpan(parent) === undefined) return;
    const target: unknown = event.command[event.commandName];
    const collection = typeof target === 'string' ? target : undefined;
    // A TCP server's `host:port`; the embedded engine's private socket is named by no address.
    const [, host, port] = /^(.+):(\d+)$/.exec(event.address) ?? [];
    const attributes: Attributes = {
      'db.system.name': 'mongodb',
      'db.namespace': event.databaseName,
      'db.operation.name': event.commandName,
      'db.collection.name': collection,
      'server.address': host,
      'server.port': port === undefined ? undefined : Number(port),
    };
    const name = collection === undefined ? event.commandName : `${event.commandName} ${collection}`;
    open.set(event.requestId, tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes }, parent));
  });
  const finish = (event: CommandSucceededEvent | CommandFailedEvent) => {
    const span = open.get(event.requestId);
    if (span === undefined) return;
    open.delete(event.requestId);
    if ('failure' in event) {
      // The failure's class and code only: a server's message may quote the values it refused.
      const code = (event.failure as { code?: unknown }).code;
      span.setAttribute('error.type', event.failure.name).setStatus({ code: SpanStatusCode.ERROR });
      if (typeof code === 'number' || typeof code === 'string') span.setAttribute('db.response.status_code', String(code));
    }
    span.end();
  };
  client.on('commandSucceeded', finish);
  client.on('commandFailed', finish);
}

/** A settlement is a span of whatever runs it (a request, or nothing: the sweep), linked to the span that opened the purchase. */
function purchaseSpans(tracer: Tracer): PurchaseTracing {
  return {
    opening(orderId) {
      const span = trace.getActiveSpan();
      if (span === undefined) return undefined;
      span.setAttribute('gateway.order_id', orderId);
      const { traceId, spanId, traceFlags } = span.spanContext();
      return traceFlags & TraceFlags.SAMPLED ? `00-${traceId}-${spanId}-01` : undefined;
    },
    settling(orderId, work) {
      return tracer.startActiveSpan('settle purchase', { attributes: { 'gateway.order_id': orderId } }, async (span) => {
        try {
          return await work((openedIn) => {
            const link = linkTo(openedIn);
            if (link !== undefined) span.addLink(link);
          });
        } catch (error) {
          span.setStatus({ code: SpanStatusCode.ERROR });
          throw error;
        } finally {
          span.end();
        }
      });
    },
  };
}

function linkTo(traceparent: string | undefined): Link | undefined {
  const [, traceId, spanId, flags] = W3C_TRACEPARENT.exec(traceparent ?? '') ?? [];
  if (traceId === undefined || spanId === undefined) return undefined;
  return { context: { traceId, spanId, traceFlags: Number.parseInt(flags!, 16), isRemote: true } };
}

function activeSpanIds(): SpanIds | undefined {
  const active = trace.getSpanContext(context.active());
  return active === undefined || !trace.isSpanContextValid(active) ? undefined : { traceId: active.traceId, spanId: active.spanId };
}
