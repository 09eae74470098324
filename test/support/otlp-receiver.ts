import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A span as an OTLP/HTTP exporter sent it, whichever encoding it used. */
export interface ReceivedSpan {
  /** The `service.name` of the process that sent it. */
  service: string;
  traceId: string;
  spanId: string;
  /** Undefined for a root span. */
  parentSpanId: string | undefined;
  name: string;
  kind: SpanKindName;
  attributes: Record<string, unknown>;
  events: { name: string; attributes: Record<string, unknown> }[];
  links: { traceId: string; spanId: string }[];
  status: { code: 'unset' | 'ok' | 'error'; message: string };
}

type SpanKindName = 'unspecified' | 'internal' | 'server' | 'client' | 'producer' | 'consumer';

const KINDS: SpanKindName[] = ['unspecified', 'internal', 'server', 'client', 'producer', 'consumer'];
const STATUS_CODES = ['unset', 'ok', 'error'] as const;

export interface OtlpReceiver {
  /** The base URL to give as `OTEL_EXPORTER_OTLP_ENDPOINT`. */
  url: string;
  /** Every span received so far. */
  spans(): ReceivedSpan[];
  /** The media types of the exports received. */
  contentTypes(): Set<string>;
  /** The headers of each export received. */
  headers(): IncomingHttpHeaders[];
  close(): Promise<void>;
}

/**
 * An OTLP/HTTP trace receiver, as a collector runs one: `POST /v1/traces` with an
 * `ExportTraceServiceRequest` in protobuf (`application/x-protobuf`, the exporters' default) or
 * JSON (`application/json`), decoded here into spans. Listens on 127.0.0.1.
 */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const contentTypes = new Set<string>();
  const headers: IncomingHttpHeaders[] = [];
  const server = createServer((request, response) => {
    void bodyOf(request).then((body) => {
      const contentType = request.headers['content-type'] ?? '';
      if (request.method !== 'POST' || request.url !== '/v1/traces') return response.writeHead(404).end();
      contentTypes.add(contentType);
      headers.push(request.headers);
      spans.push(...(contentType.startsWith('application/json') ? spansFromJson(JSON.parse(body.toString())) : spansFromProtobuf(body)));
      response.writeHead(200, { 'content-type': contentType }).end(contentType.startsWith('application/json') ? '{}' : '');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    spans: () => [...spans],
    contentTypes: () => contentTypes,
    headers: () => [...headers],
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

async function bodyOf(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

// OTLP/JSON: ids in hex, enums as numbers, attribute values as { stringValue | intValue | boolValue | doubleValue }.

interface JsonKeyValue {
  key: string;
  value: Record<string, unknown>;
}

interface JsonSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: JsonKeyValue[];
  events?: { name: string; attributes?: JsonKeyValue[] }[];
  links?: { traceId: string; spanId: string }[];
  status?: { code?: number; message?: string };
}

interface JsonRequest {
  resourceSpans: { resource: { attributes: JsonKeyValue[] }; scopeSpans: { spans: JsonSpan[] }[] }[];
}

function spansFromJson(request: JsonRequest): ReceivedSpan[] {
  return request.resourceSpans.flatMap(({ resource, scopeSpans }) => {
    const service = String(jsonAttributes(resource.attributes)['service.name']);
    return scopeSpans.flatMap(({ spans }) =>
      spans.map((span) => ({
        service,
        traceId: span.traceId,
        spanId: span.spanId,
        parentSpanId: span.parentSpanId || undefined,
        name: span.name,
        kind: KINDS[span.kind]!,
        attributes: jsonAttributes(span.attributes),
        events: (span.events ?? []).map((event) => ({ name: event.name, attributes: jsonAttributes(event.attributes) })),
        links: (span.links ?? []).map(({ traceId, spanId }) => ({ traceId, spanId })),
        status: { code: STATUS_CODES[span.status?.code ?? 0]!, message: span.status?.message ?? '' },
      })),
    );
  });
}

function jsonAttributes(attributes: JsonKeyValue[] = []): Record<string, unknown> {
  return Object.fromEntries(
    attributes.map(({ key, value }) => {
      if ('intValue' in value) return [key, Number(value.intValue)];
      return [key, value.stringValue ?? value.boolValue ?? value.doubleValue];
    }),
  );
}

// OTLP/protobuf: `opentelemetry/proto/collector/trace/v1` and `trace/v1`, read by field number.

/** The fields of one protobuf message, by field number, in order: varints as bigint, length-delimited as bytes. */
function fieldsOf(bytes: Uint8Array): Map<number, (bigint | Uint8Array)[]> {
  const fields = new Map<number, (bigint | Uint8Array)[]>();
  let at = 0;
  const varint = (): bigint => {
    let value = 0n;
    for (let shift = 0n; ; shift += 7n) {
      const byte = bytes[at++]!;
      value |= BigInt(byte & 0x7f) << shift;
      if (byte < 0x80) return value;
    }
  };
  const take = (length: number) => bytes.subarray(at, (at += length));
  while (at < bytes.length) {
    const key = Number(varint());
    const wireType = key & 7;
    const value = wireType === 0 ? varint() : wireType === 1 ? take(8) : wireType === 2 ? take(Number(varint())) : take(4);
    fields.set(key >> 3, [...(fields.get(key >> 3) ?? []), value]);
  }
  return fields;
}

const messages = (fields: Map<number, (bigint | Uint8Array)[]>, field: number) =>
  (fields.get(field) ?? []).map((value) => fieldsOf(value as Uint8Array));
const bytesOf = (fields: Map<number, (bigint | Uint8Array)[]>, field: number) => fields.get(field)?.[0] as Uint8Array | undefined;
const textOf = (fields: Map<number, (bigint | Uint8Array)[]>, field: number) => Buffer.from(bytesOf(fields, field) ?? []).toString('utf8');
const hexOf = (fields: Map<number, (bigint | Uint8Array)[]>, field: number) => Buffer.from(bytesOf(fields, field) ?? []).toString('hex');
const numberOf = (fields: Map<number, (bigint | Uint8Array)[]>, field: number) =>
  Number((fields.get(field)?.[0] as bigint | undefined) ?? 0n);

function spansFromProtobuf(body: Uint8Array): ReceivedSpan[] {
  return messages(fieldsOf(body), 1).flatMap((resourceSpans) => {
    const service = String(protobufAttributes(messages(resourceSpans, 1)[0]!)['service.name']);
    return messages(resourceSpans, 2).flatMap((scopeSpans) =>
      messages(scopeSpans, 2).map((span) => {
        const status = messages(span, 15)[0];
        return {
          service,
          traceId: hexOf(span, 1),
          spanId: hexOf(span, 2),
          parentSpanId: hexOf(span, 4) || undefined,
          name: textOf(span, 5),
          kind: KINDS[numberOf(span, 6)]!,
          attributes: protobufAttributes(span, 9),
          events: messages(span, 11).map((event) => ({ name: textOf(event, 2), attributes: protobufAttributes(event, 3) })),
          links: messages(span, 13).map((link) => ({ traceId: hexOf(link, 1), spanId: hexOf(link, 2) })),
          status: { code: STATUS_CODES[status ? numberOf(status, 3) : 0]!, message: status ? textOf(status, 2) : '' },
        };
      }),
    );
  });
}

/** The `KeyValue`s at `field` (a resource's are at 1): strings, booleans and integers. */
function protobufAttributes(message: Map<number, (bigint | Uint8Array)[]>, field = 1): Record<string, unknown> {
  return Object.fromEntries(
    messages(message, field).map((keyValue) => {
      const value = messages(keyValue, 2)[0]!;
      if (value.has(1)) return [textOf(keyValue, 1), textOf(value, 1)];
      if (value.has(2)) return [textOf(keyValue, 1), numberOf(value, 2) === 1];
      if (value.has(3)) return [textOf(keyValue, 1), numberOf(value, 3)];
      return [textOf(keyValue, 1), undefined];
    }),
  );
}
