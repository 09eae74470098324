import { badRequest } from '../errors.js';
import { requestIdOf } from '../observability/request-log.js';
import type { AdmissionChecks } from '../operations/admission.js';
import type { CallerLocals } from './authenticated.js';
import { type StepAfter, stepAfter } from './locals.js';

/**
 * `POST /graphql` with a JSON array of operations (Apollo Client's `BatchHttpLink`, Relay's
 * batching network layers), once its body is read and before anything of it runs: a batch of
 * more than `maxOperations` is refused whole (400), and each operation past the first goes
 * through the admission sequence again, so that every operation counts as one request for the
 * rate limit (the request itself was admitted once already). Apollo Server then runs each
 * operation through the whole pipeline on its own: trusted documents, validation and its limits,
 * the cost; their answers, in order, are one answer, bounded as a whole (`RequestContext.forOperation`).
 */
export function batchesOfAtMost(maxOperations: number, admission: Pick<AdmissionChecks, 'admit'>): StepAfter<CallerLocals> {
  return stepAfter(async (request, _response, { caller }, next) => {
    if (request.method === 'POST' && Array.isArray(request.body)) {
      const count = request.body.length;
      if (maxOperations === 1) {
        throw badRequest('batched requests are not served here (GRAPHQL_BATCH_MAX=1): send one operation per request');
      }
      if (count > maxOperations) {
        throw badRequest(
          `a batch may carry at most ${maxOperations} operations (GRAPHQL_BATCH_MAX); this one carries ${count}, and none was run`,
        );
      }
      const admitted = { caller, door: 'graphql' as const, requestId: requestIdOf(request) };
      for (let operation = 1; operation < count; operation++) await admission.admit(admitted);
    }
    next();
  });
}
