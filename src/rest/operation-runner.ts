import type { Caller } from '../auth/authenticator.js';
import type { Failure } from '../errors.js';
import type { PreparedOperation } from './prepared-routes.js';

/** How a route's operation ended: its data, or the failure its endpoint answers in its own shape. */
export type RouteOutcome = { data: Record<string, unknown> } | { failure: Failure };

/** One caller's requests to run the table's operations. */
export interface CallerSession {
  /** Who is calling, when this process checked the credentials itself (for the request log). */
  caller?: Caller;
  run(operation: PreparedOperation, variables: Record<string, unknown>): Promise<RouteOutcome>;
  /** Whether the credentials are good, for answers that need no operation (bad input still owes a 401 first). */
  confirmCaller(): Promise<boolean>;
}

/** What a runner needs to know of the HTTP request it serves. */
export interface CallerRequest {
  authorization: string | undefined;
  requestId: string;
  /** The client's address as this server sees it (after `trust proxy`). */
  clientAddress: string | undefined;
}

/**
 * Runs the table's operations: in this process (through the operation pipeline), or against a
 * remote gateway (sidecar mode). `S` says what its sessions know: the in-process runner's name
 * their caller.
 */
export interface OperationRunner<S extends CallerSession = CallerSession> {
  /** A session for the caller, or null when the credentials are refused outright. */
  open(request: CallerRequest): Promise<S | null>;
}

/** What the steps of a legacy endpoint read after its session opened: the session, and its caller as far as it knows. */
export interface SessionLocals<S extends CallerSession = CallerSession> {
  readonly session: S;
  readonly caller: S['caller'];
}
