import { UNAUTHORIZED, type OperationExecutor, type OperationResult, type OperationSession } from './executor.js';

/** The upstream gateway could not be reached, was too slow, or answered something that is not GraphQL. */
export class UpstreamUnavailableError extends Error {
  override readonly name = 'UpstreamUnavailableError';
}

const CONFIRM_CALLER = { text: 'query ConfirmCaller { __typename }', name: 'ConfirmCaller' };

/** Sidecar mode: forwards each operation, with the caller's `Authorization`, to a remote GraphQL endpoint. */
export function remoteExecutor(upstream: URL, timeoutMs: number): OperationExecutor {
  async function post(
    authorization: string,
    operation: { text: string; name: string },
    variables: Record<string, unknown>,
  ): Promise<OperationResult | typeof UNAUTHORIZED> {
    let response: Response;
    try {
      response = await fetch(upstream, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization },
        body: JSON.stringify({ query: operation.text, operationName: operation.name, variables }),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      throw new UpstreamUnavailableError(`upstream ${upstream.origin} did not answer`, { cause: error });
    }
    if (response.status === 401) return UNAUTHORIZED;
    try {
      const body = (await response.json()) as OperationResult;
      if (typeof body !== 'object' || body === null || (!('data' in body) && !('errors' in body))) throw new Error('not a GraphQL response');
      return body;
    } catch (error) {
      throw new UpstreamUnavailableError(`upstream ${upstream.origin} answered ${response.status} without a GraphQL body`, {
        cause: error,
      });
    }
  }

  return {
    async open(authorization) {
      // Credentials are checked upstream; a request without any is refused here without a round trip.
      if (authorization === undefined || authorization.trim() === '') return null;
      const session: OperationSession = {
        run: (operation, variables) => post(authorization, operation, variables),
        confirmCaller: async () => (await post(authorization, CONFIRM_CALLER, {})) !== UNAUTHORIZED,
      };
      return session;
    },
  };
}
