import { z } from 'zod';

import {
  databaseUnavailable,
  type Failure,
  internal,
  methodNotAllowed,
  noSuchEndpoint,
  payloadTooLarge,
  rateLimited,
  unauthenticated,
} from '../errors.js';
import { BODY_LIMIT_BYTES } from '../limits.js';
import { type FailureField, legacyAnswer } from './legacy-answer.js';
import { failureBody, type RestRoute } from './route.js';

type JsonSchema = Record<string, unknown>;

const EXAMPLE_REQUEST_ID = '3f0e6c1a-5b7d-4e2a-9c4f-8d1b2a6e7f90';

/** A zod schema as JSON Schema 2020-12, OpenAPI 3.1's dialect: `input` for what a client sends, `output` for answers. */
function jsonSchema(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io });
  return rest;
}

/**
 * How an endpoint answers `failure`, from the renderer that writes it: `status: false` and the
 * sentence in the failure field (exactly that sentence, unless it names the request's path or
 * method), with a real body as the example.
 */
function failureResponse(
  description: string,
  failure: Failure,
  fields: FailureField[],
  headers: Record<string, JsonSchema> = {},
): Record<string, unknown> {
  const exact = failure.kind !== 'noSuchEndpoint' && failure.kind !== 'methodNotAllowed';
  const bodies = fields.map((field) => legacyAnswer(failure, field, EXAMPLE_REQUEST_ID).body as Record<string, string>);
  const schemas = fields.map((field, index) => {
    const body = failureBody(field, exact ? z.literal(bodies[index]![field]!) : z.string());
    return jsonSchema(failure.kind === 'internal' ? body.extend({ request_id: z.string() }) : body, 'output');
  });
  return {
    description,
    ...(Object.keys(headers).length > 0 && {
      headers: Object.fromEntries(Object.entries(headers).map(([name, schema]) => [name, { required: true, schema }])),
    }),
    content: { 'application/json': { schema: schemas.length === 1 ? schemas[0] : { anyOf: schemas }, example: bodies[0] } },
  };
}

/** The parameters a route reads from the query string and from headers, from the schemas that read them. */
function parameters(route: RestRoute): object[] {
  const sources = [
    ['query', route.input.from === 'query' ? route.input.schema : undefined],
    ['header', route.input.headers],
  ] as const;
  return sources.flatMap(([location, source]) => {
    if (source === undefined) return [];
    const { properties = {}, required = [] } = jsonSchema(source, 'input') as {
      properties?: Record<string, JsonSchema>;
      required?: string[];
    };
    return Object.entries(properties).map(([name, { description, ...schema }]) => ({
      name,
      in: location,
      required: required.includes(name),
      description,
      schema,
    }));
  });
}

/**
 * The OpenAPI 3.1 description of the legacy endpoints, generated from the route table:
 * parameters, bodies and answers from the zod schemas that parse and type them, failures
 * from the renderer that writes them, so that it cannot drift from what is served. Served
 * under `basePath` too, the endpoints are listed once with a second server: client
 * generators pick a server, where listing every path twice would give each operation twice.
 */
export function openApiDocument(routes: readonly RestRoute[], version: string, basePath?: string): Record<string, unknown> {
  const paths = Object.fromEntries(routes.map((route) => [route.path, { [route.method.toLowerCase()]: operationOf(route) }]));
  return {
    openapi: '3.1.0',
    info: {
      title: 'chat-gateway legacy REST API',
      version,
      description:
        "The documented conversation and quota endpoints, and the legacy web client's rename and clean. " +
        'Credentials: `Authorization: Bearer <token>`, the bare token, or an `sk-` API key. Any other path answers ' +
        '404 (`NoSuchEndpoint`); a documented path with another method answers 405 (`MethodNotAllowed`) in that ' +
        "endpoint's failure field.",
    },
    servers: [
      { url: '/', description: 'This server' },
      ...(basePath ? [{ url: basePath, description: 'This server, under its REST base path' }] : []),
    ],
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
        apiKey: { type: 'apiKey', in: 'header', name: 'Authorization' },
      },
      responses: {
        NoSuchEndpoint: failureResponse('No endpoint at this path', noSuchEndpoint('GET', '/nowhere'), ['error']),
        MethodNotAllowed: failureResponse(
          'The path exists for another method, named in `Allow`',
          methodNotAllowed('GET'),
          ['message', 'error'],
          {
            Allow: { enum: ['GET', 'POST'] },
          },
        ),
      },
    },
    paths,
  };
}

/** One endpoint: its parameters, body and every answer it gives. */
function operationOf(route: RestRoute): Record<string, unknown> {
  const fields = [route.failureField];
  return {
    operationId: route.path.slice(1).replace(/\/(\w)/g, (_, letter: string) => letter.toUpperCase()),
    summary: route.summary,
    security: [{ bearer: [] }, { apiKey: [] }],
    parameters: parameters(route),
    ...(route.input.from === 'json-body' && {
      requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(route.input.schema, 'input') } } },
    }),
    responses: {
      '200': {
        description: `Success, or a failure reported as \`status: false\` with a sentence in \`${route.failureField}\``,
        content: { 'application/json': { schema: jsonSchema(route.answers, 'output') } },
      },
      '401': failureResponse('Missing, malformed, expired or unknown credentials', unauthenticated(), fields, {
        'WWW-Authenticate': { const: 'Bearer' },
      }),
      ...(route.input.from === 'json-body' && {
        '413': failureResponse(`A body over ${BODY_LIMIT_BYTES} bytes`, payloadTooLarge(BODY_LIMIT_BYTES), fields),
      }),
      '429': failureResponse('Too many requests; retry after the number of seconds in `Retry-After`', rateLimited(1), fields, {
        'Retry-After': { type: 'integer', minimum: 1 },
      }),
      '500': failureResponse('An unexpected failure, logged under the request id', internal(undefined), fields),
      '503': failureResponse('The database or the upstream gateway is unavailable; try again', databaseUnavailable(), fields),
    },
  };
}
