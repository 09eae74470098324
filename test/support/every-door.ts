import { createClient as createSseClient } from 'graphql-sse';

import { graphql, type TestGateway } from './gateway.js';
import { connectAs } from './websocket.js';

/** The `quota` operation each door is sent; a test that names them can tell the doors apart by name. */
export interface DoorOperations {
  graphql: string;
  websocket: string;
  sse: string;
  multipart: string;
}

export const ANONYMOUS_OPERATIONS: DoorOperations = {
  graphql: '{ quota }',
  websocket: 'subscription { quota }',
  sse: 'subscription { quota }',
  multipart: 'subscription { quota }',
};

/**
 * One operation of `authorization`'s caller through each door (`/graphql`, REST `/quota`,
 * WebSocket, SSE, multipart) and what each answered: an HTTP status, `next`, or the first error's
 * code. `multipart` reads the multipart door's answer (by default its status).
 */
export async function throughEveryDoor(
  gateway: TestGateway,
  authorization: string,
  operations: DoorOperations = ANONYMOUS_OPERATIONS,
  multipart: (response: Response) => Promise<unknown> = async (response) => {
    await response.body?.cancel();
    return response.status;
  },
): Promise<Record<string, unknown>> {
  const answers: Record<string, unknown> = {};
  answers.graphql = (await graphql(gateway, operations.graphql, { authorization })).status;
  answers.rest = (await fetch(`${gateway.url}/quota`, { headers: { authorization } })).status;
  const socket = await connectAs(gateway.url, authorization);
  const reply = await socket.subscribe(operations.websocket).next();
  answers.websocket = reply.type === 'error' ? reply.payload[0].extensions.code : reply.type;
  await socket.close();
  const sse = createSseClient({ url: `${gateway.url}/graphql/stream`, headers: { authorization }, retryAttempts: 0 });
  answers.sse = await new Promise((resolve) => {
    const dispose = sse.subscribe(
      { query: operations.sse },
      {
        next: (value) => (dispose(), resolve(value.errors ? value.errors[0]!.extensions!.code : 'next')),
        error: (error) => resolve((error as { response?: Response }).response?.status ?? String(error)),
        complete: () => {},
      },
    );
  });
  sse.dispose();
  const response = await fetch(`${gateway.url}/graphql`, {
    method: 'POST',
    headers: { authorization, 'content-type': 'application/json', accept: 'multipart/mixed;subscriptionSpec=1.0' },
    body: JSON.stringify({ query: operations.multipart }),
  });
  answers.multipart = await multipart(response);
  return answers;
}
