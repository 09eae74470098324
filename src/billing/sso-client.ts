import { setTimeout as sleep } from 'node:timers/promises';

import { z } from 'zod';

import type { Logger } from '../logger.js';
import type { GiftPackage } from './gift.js';

/** The answer to a payment: the wallet was charged, or it held too little and nothing was charged. */
export type PaymentOutcome = 'paid' | 'insufficient-funds';
/** What the provider knows about an order id: charged, answered "too low", or never seen. */
export type PaymentState = 'paid' | 'unpaid' | 'unknown';

/** The provider could not be reached or answered something unexpected. */
export class SsoUnavailableError extends Error {
  override readonly name = 'SsoUnavailableError';

  /** What went wrong, without the call, e.g. `answered HTTP 401` or `did not answer within 3000 ms (3 attempts)`. */
  readonly reason: string;
  /** The HTTP status of the last answer, when there was one. */
  readonly status: number | undefined;
  /** The per-attempt timeout, when the last attempt ran out of it. */
  readonly timeoutMs: number | undefined;

  constructor(
    /** e.g. `POST /app/payment` */
    readonly call: string,
    failure: Failure,
  ) {
    super(`SSO provider unavailable: ${call} ${failure.reason}`, { cause: failure.cause });
    this.reason = failure.reason;
    this.status = failure.status;
    this.timeoutMs = failure.timeoutMs;
  }
}

/** The external single-sign-on provider of the official deployment (docs/billing.md). */
export interface SsoClient {
  /**
   * Charges `amount` money units to the user's wallet under `order`. The provider charges an
   * order id at most once, so asking again with the same order returns the first answer.
   */
  pay(payment: { user: string; order: string; amount: number }): Promise<PaymentOutcome>;
  paymentState(order: string): Promise<PaymentState>;
  certification(user: string): Promise<GiftPackage>;
  /** The longest one call can take, every attempt and pause included: after that it has settled or failed. */
  readonly callWindowMs: number;
}

export interface SsoClientOptions {
  /** Base URL, with or without a trailing `/`. */
  url: string;
  secret: string;
  /** Per attempt; default 3000. */
  timeoutMs?: number;
  /** Total attempts for transport failures, timeouts, 5xx and 429; default 3. */
  attempts?: number;
  /** Where every failed call is reported, at `warn`. */
  logger?: Logger;
}

interface Failure {
  reason: string;
  status?: number;
  timeoutMs?: number;
  cause?: unknown;
}

const DEFAULT_TIMEOUT_MS = 3000;
const DEFAULT_ATTEMPTS = 3;
/** Waits before the 2nd, 3rd, … attempt; the last one repeats. */
const BACKOFF_MS = [100, 300, 900] as const;

const paymentAnswer = z.object({ status: z.literal(true), type: z.boolean() });
const paymentStateAnswer = z.object({ status: z.literal(true), state: z.enum(['paid', 'unpaid', 'unknown']) });
const certificationAnswer = z.object({ status: z.literal(true), cert: z.boolean(), teenager: z.boolean() });

export function createSsoClient(options: SsoClientOptions): SsoClient {
  return new HttpSsoClient(options);
}

/** The provider over HTTP: each call a JSON POST with the bearer secret, retried only when no well-formed answer came back. */
class HttpSsoClient implements SsoClient {
  readonly callWindowMs: number;
  private readonly base: URL;
  private readonly timeoutMs: number;
  private readonly attempts: number;
  private readonly headers: Record<string, string>;

  constructor(private readonly options: SsoClientOptions) {
    this.base = new URL(options.url.endsWith('/') ? options.url : `${options.url}/`);
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.attempts = options.attempts ?? DEFAULT_ATTEMPTS;
    if (!Number.isInteger(this.attempts) || this.attempts < 1) throw new RangeError('attempts must be a positive integer');
    if (!(this.timeoutMs > 0)) throw new RangeError('timeoutMs must be positive');
    this.callWindowMs = this.attempts * this.timeoutMs;
    for (let attempt = 2; attempt <= this.attempts; attempt += 1) this.callWindowMs += backoffBefore(attempt);
    this.headers = { authorization: `Bearer ${options.secret}`, 'content-type': 'application/json', accept: 'application/json' };
  }

  async pay({ user, order, amount }: { user: string; order: string; amount: number }): Promise<PaymentOutcome> {
    if (!Number.isFinite(amount) || amount <= 0) throw new RangeError('amount must be a positive number');
    const answer = await this.call('app/payment', { user, order, amount }, paymentAnswer);
    return answer.type ? 'paid' : 'insufficient-funds';
  }

  async paymentState(order: string): Promise<PaymentState> {
    return (await this.call('app/payment/status', { order }, paymentStateAnswer)).state;
  }

  async certification(user: string): Promise<GiftPackage> {
    const answer = await this.call('app/cert', { user }, certificationAnswer);
    return { cert: answer.cert, teenager: answer.teenager };
  }

  /** One call; the body is resent unchanged. A call that fails is logged with its status or timeout and the order it was about. */
  private async call<T>(path: string, body: { order?: string } & Record<string, unknown>, schema: z.ZodType<T>): Promise<T> {
    try {
      return await this.attemptAll(path, JSON.stringify(body), schema);
    } catch (error) {
      if (error instanceof SsoUnavailableError) {
        const { call, status, reason } = error;
        this.options.logger?.warn(
          { call, orderId: body.order, status, timeoutMs: error.timeoutMs, reason },
          status === 401 || status === 403 ? 'the SSO provider refused our credentials: check SSO_SECRET' : 'an SSO provider call failed',
        );
      }
      throw error;
    }
  }

  private async attemptAll<T>(path: string, payload: string, schema: z.ZodType<T>): Promise<T> {
    let lastFailure: Failure = { reason: 'was not called' };
    for (let attempt = 1; attempt <= this.attempts; attempt += 1) {
      if (attempt > 1) await sleep(backoffBefore(attempt));
      const answer = await this.attemptOnce(path, payload);
      if ('reason' in answer) {
        lastFailure = answer;
        continue;
      }
      const { status, text } = answer;
      if (status < 200 || status > 299) throw unavailable(path, { reason: `answered HTTP ${status}`, status });
      return parseAnswer(path, text, schema);
    }
    const tries = `${this.attempts} attempt${this.attempts === 1 ? '' : 's'}`;
    throw unavailable(path, { ...lastFailure, reason: `${lastFailure.reason} (${tries})` });
  }

  /** One attempt's answer, or why it is worth another attempt (no answer, a 5xx or a 429). */
  private async attemptOnce(path: string, payload: string): Promise<{ status: number; text: string } | Failure> {
    const { timeoutMs } = this;
    try {
      // A redirect is an unexpected answer: following it could send the secret elsewhere.
      const response = await fetch(new URL(path, this.base), {
        method: 'POST',
        headers: this.headers,
        body: payload,
        signal: AbortSignal.timeout(timeoutMs),
        redirect: 'manual',
      });
      const text = await response.text();
      if (response.status >= 500 || response.status === 429) return { reason: `answered HTTP ${response.status}`, status: response.status };
      return { status: response.status, text };
    } catch (error) {
      const timedOut = error instanceof Error && error.name === 'TimeoutError';
      return timedOut
        ? { reason: `did not answer within ${timeoutMs} ms`, timeoutMs, cause: error }
        : { reason: 'could not be reached', cause: error };
    }
  }
}

function backoffBefore(attempt: number): number {
  return BACKOFF_MS[Math.min(attempt - 2, BACKOFF_MS.length - 1)] ?? 0;
}

function parseAnswer<T>(path: string, text: string, schema: z.ZodType<T>): T {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw unavailable(path, { reason: 'answered something that is not JSON', cause: error });
  }
  const parsed = schema.safeParse(json);
  if (!parsed.success) throw unavailable(path, { reason: 'answered an unexpected body', cause: parsed.error });
  return parsed.data;
}

// Messages name the path only: never the secret, nor a URL that might carry credentials.
function unavailable(path: string, failure: Failure): SsoUnavailableError {
  return new SsoUnavailableError(`POST /${path}`, failure);
}
