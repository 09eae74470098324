import type { Request } from 'express';

import type { Door } from '../observability/labels.js';
import { requestIdOf } from '../observability/request-log.js';
import type { AdmissionChecks } from '../operations/admission.js';
import type { CallerLocals } from './authenticated.js';
import { type StepAfter, stepAfter } from './locals.js';

/**
 * The admission sequence (`operations/admission.ts`) as a step of an HTTP request, behind the
 * step that named its caller: one request, admitted once, through `door` (or the door
 * `doorOf` picks for the request).
 */
export function admissionStep(
  admission: Pick<AdmissionChecks, 'admit'>,
  door: Door | ((request: Request) => Door),
): StepAfter<CallerLocals> {
  return stepAfter(async (request, _response, { caller }, next) => {
    await admission.admit({ caller, door: typeof door === 'function' ? door(request) : door, requestId: requestIdOf(request) });
    next();
  });
}
