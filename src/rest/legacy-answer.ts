import { type Failure, type FailureKind, type HttpAnswer, statusOf } from '../errors.js';
import { failureHandler } from '../http/failures.js';

/** Where a legacy endpoint reports failures: `message` for conversations, `error` for quota, buy and package. */
export type FailureField = 'message' | 'error';

const SERVICE_UNAVAILABLE_TEXT = 'service temporarily unavailable, try again later';

/** How the legacy API answers a kind where it differs from GraphQL. */
interface LegacyWording {
  /** The legacy API reports unreadable bodies and bad input as `status: false` with HTTP 200, as the legacy service did. */
  status?: number;
  /** The legacy API's own sentence, in place of the failure's message. */
  text?: string;
}

const LEGACY: Partial<Record<FailureKind, LegacyWording>> = {
  unauthenticated: { text: 'unauthorized' },
  badRequest: { status: 200 },
  payloadTooLarge: { text: 'request body too large' },
  unsupportedMediaType: { status: 200 },
  responseTooLarge: { status: 200 },
  databaseUnavailable: { text: SERVICE_UNAVAILABLE_TEXT },
  upstreamUnavailable: { text: SERVICE_UNAVAILABLE_TEXT },
  internal: { text: 'internal error' },
};

/** A failure as a legacy endpoint answers it: `status: false` and a sentence in its failure field. */
export function legacyAnswer(failure: Failure, field: FailureField, requestId: string): HttpAnswer {
  const wording = LEGACY[failure.kind] ?? {};
  return {
    status: wording.status ?? statusOf(failure),
    headers: failure.headers,
    body: {
      status: false,
      [field]: wording.text ?? failure.message,
      // An internal error names the request, so a report can be matched with its log line.
      ...(failure.kind === 'internal' && { request_id: requestId }),
    },
  };
}

/** Failures of a legacy endpoint, in its usual shape; `error` also serves paths that match no endpoint. */
export const legacyFailures = (field: FailureField) => failureHandler((failure, requestId) => legacyAnswer(failure, field, requestId));
