import express, { type Request, type RequestHandler, type Response } from 'express';
import { describe, expect, it } from 'vitest';

import type { Caller } from '../../../src/auth/authenticator.js';
import { admissionStep } from '../../../src/http/admission.js';
import { authenticated, type CallerLocals } from '../../../src/http/authenticated.js';
import { behind, stepAfter } from '../../../src/http/locals.js';
import type { Admission } from '../../../src/operations/admission.js';

/** Runs `steps` as Express would, in order, each once the one before it called `next`; resolves with what stopped the chain. */
async function runSteps(steps: readonly RequestHandler[], request: Request, response: Response): Promise<{ ran: number; error?: unknown }> {
  let ran = 0;
  for (const step of steps) {
    let called = false;
    try {
      await step(request, response, (error?: unknown) => {
        if (error !== undefined) throw error;
        called = true;
      });
    } catch (error) {
      return { ran, error };
    }
    ran++;
    if (!called) break;
  }
  return { ran };
}

function fakeRequest(authorization?: string): Request {
  return {
    id: 'request-1',
    get: (name: string) => (name.toLowerCase() === 'authorization' ? authorization : undefined),
  } as unknown as Request;
}

const fakeResponse = (): Response => ({ locals: {} }) as unknown as Response;

const ALICE: Caller = { userId: 7 };
const authenticator = { authenticate: async (authorization: string | undefined) => (authorization === 'Bearer alice' ? ALICE : null) };

describe('the steps behind the step that makes their locals', () => {
  it('hand each step the locals the first one made, and set them on the response for the request log', async () => {
    const seen: unknown[] = [];
    const response = fakeResponse();
    const steps = behind(
      async () => ({ caller: ALICE, extra: 'x' }),
      stepAfter<{ caller: Caller; extra: string }>((_request, _response, locals, next) => {
        seen.push(locals);
        next();
      }),
    );
    expect(await runSteps(steps, fakeRequest(), response)).toEqual({ ran: 2 });
    expect(seen).toEqual([{ caller: ALICE, extra: 'x' }]);
    expect(response.locals).toMatchObject({ caller: ALICE });
  });

  it('run no later step when the first one throws', async () => {
    const ran: string[] = [];
    const steps = behind(
      () => {
        throw new Error('refused');
      },
      stepAfter<object>(() => void ran.push('later')),
    );
    const outcome = await runSteps(steps, fakeRequest(), fakeResponse());
    expect(outcome).toMatchObject({ ran: 0, error: new Error('refused') });
    expect(ran).toEqual([]);
  });

  it('are no Express steps of their own: only `behind` mounts one (the type checker refuses the rest)', () => {
    const step = stepAfter<CallerLocals>((_request, _response, _locals, next) => next());
    const app = express();
    // Express refuses it too, at once: it is no function.
    expect(() =>
      // @ts-expect-error a step that reads the caller cannot be mounted where no step made one.
      app.get('/', step),
    ).toThrow(TypeError);
    // Behind authentication, it is one.
    expect(() => app.get('/', ...authenticated(authenticator, step))).not.toThrow();
  });
});

describe('authentication, then the admission sequence', () => {
  it('refuses a request without accepted credentials with 401 before any later step runs', async () => {
    const admitted: Admission[] = [];
    const steps = authenticated(authenticator, admissionStep({ admit: async (admission) => void admitted.push(admission) }, 'rest'));
    const outcome = await runSteps(steps, fakeRequest('Bearer mallory'), fakeResponse());
    expect(outcome).toMatchObject({ ran: 0, error: { kind: 'unauthenticated' } });
    expect(admitted).toEqual([]);
  });

  it('admits an accepted caller once, through the door the step names, with the request id', async () => {
    const admitted: Admission[] = [];
    const steps = authenticated(
      authenticator,
      admissionStep({ admit: async (admission) => void admitted.push(admission) }, (request) =>
        request.get('x-door') ? 'sse' : 'graphql',
      ),
    );
    expect(await runSteps(steps, fakeRequest('Bearer alice'), fakeResponse())).toEqual({ ran: 2 });
    expect(admitted).toEqual([{ caller: ALICE, door: 'graphql', requestId: 'request-1' }]);
  });

  it('stops at a refusal of the admission sequence', async () => {
    const refusal = new Error('rate limited');
    const steps = authenticated(
      authenticator,
      admissionStep(
        {
          admit: async () => {
            throw refusal;
          },
        },
        'rest',
      ),
      stepAfter<CallerLocals>(() => {
        throw new Error('must not run');
      }),
    );
    expect(await runSteps(steps, fakeRequest('Bearer alice'), fakeResponse())).toEqual({ ran: 1, error: refusal });
  });
});
