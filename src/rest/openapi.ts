import { constant, object, string } from './json-schema.js';
import type { RestRoute } from './route.js';

/**
 * The OpenAPI 3.1 description of the legacy endpoints, generated from the
 * route table so that it cannot drift from what the layer serves.
 */
export function openApiDocument(routes: readonly RestRoute[], version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const unauthorized = object({ status: constant(false), [route.failureField]: constant('unauthorized') });
    paths[route.path] = {
      [route.method.toLowerCase()]: {
        operationId: route.path.slice(1).replace(/\/(\w)/g, (_, letter: string) => letter.toUpperCase()),
        summary: route.summary,
        security: [{ bearer: [] }, { apiKey: [] }],
        parameters: route.input.parameters,
        ...(route.input.requestBody
          ? { requestBody: { required: true, content: { 'application/json': { schema: route.input.requestBody } } } }
          : {}),
        responses: {
          '200': {
            description: `Success, or a failure reported as \`status: false\` with a sentence in \`${route.failureField}\``,
            content: { 'application/json': { schema: route.answers } },
          },
          '401': {
            description: 'Missing, malformed, expired or unknown credentials',
            headers: { 'WWW-Authenticate': { schema: constant('Bearer') } },
            content: { 'application/json': { schema: unauthorized } },
          },
          '429': {
            description: 'Too many requests; retry after the number of seconds in `Retry-After`',
            content: { 'application/json': { schema: object({ status: constant(false), [route.failureField]: string }) } },
          },
          '503': {
            description: 'The database or the upstream gateway is unavailable; try again',
            content: { 'application/json': { schema: object({ status: constant(false), [route.failureField]: string }) } },
          },
        },
      },
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'chat-gateway legacy REST API',
      version,
      description:
        'The documented conversation and quota endpoints. Credentials: `Authorization: Bearer <token>`, ' +
        'the bare token, or an `sk-` API key.',
    },
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
        apiKey: { type: 'apiKey', in: 'header', name: 'Authorization' },
      },
    },
    paths,
  };
}
