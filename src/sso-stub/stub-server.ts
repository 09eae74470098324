import { timingSafeEqual } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

import { z } from 'zod';

/**
 * A local stand-in for the external SSO provider (`billing/sso-client.ts`): wallets, payments charged at most
 * once per order id, payment status and certification flags, plus faults for tests.
 */

/** An order the stub charged. */
export interface SsoStubCharge {
  order: string;
  user: string;
  /** Money units. */
  amount: number;
}

export interface SsoStubUser {
  /** Money units; kept internally as integer hundredths so that repeated charges never drift. */
  wallet: number;
  cert: boolean;
  teenager: boolean;
}

export interface SsoStubFaults {
  /** Answer 503 to everything. */
  down?: boolean;
  /** Wait this long before answering (payments are charged first, as a slow provider would). */
  delayMs?: number;
  /** Charge the order, then destroy the socket without answering, this many times. */
  loseNextPaymentAnswers?: number;
  /** Answer 200 with a body that is not JSON, changing nothing. */
  garbage?: boolean;
  /**
   * A stalled worker: each payment received is acted on this long after it arrived (a function is
   * asked once per payment), and answered then. Until then its order's status is `unknown`.
   */
  stallMs?: number | (() => number);
}

export interface SsoStubCall {
  path: string;
  /** The parsed JSON body, the raw text when it was not JSON, or `undefined` when empty. */
  body: unknown;
  /** The W3C trace context the caller sent along (a traced gateway does), when it sent one. */
  traceparent?: string;
  /** The W3C trace context's vendor state, and W3C baggage, when the caller sent them. */
  tracestate?: string;
  baggage?: string;
}

export interface SsoStub {
  /** `http://HOST:PORT` */
  readonly url: string;
  /** Current wallet in money units. */
  wallet(user: string): number;
  setUser(user: string, data: Partial<SsoStubUser>): void;
  setFaults(faults: SsoStubFaults): void;
  /** Every request received, in order, including refused ones. */
  readonly calls: SsoStubCall[];
  /** Order ids charged, in the order they were charged. */
  paidOrders(): string[];
  /** Every charge, in the order they happened. */
  charges(): SsoStubCharge[];
  /** What `/app/payment/status` answers for `order` now. */
  paymentState(order: string): 'paid' | 'unpaid' | 'unknown';
  /** Payments received during a stall and not acted on yet. */
  stalled(): number;
  /**
   * Charges an order it had answered "too low" for, as a provider that changes its mind would
   * (the wallet must hold the amount by now). From then on the order's status is `paid`.
   */
  changeMind(order: string): void;
  close(): Promise<void>;
}

export interface SsoStubOptions {
  /** The shared secret callers must present; `undefined` accepts any bearer credential (for trying things out). */
  secret: string | undefined;
  users?: Record<string, Partial<SsoStubUser>>;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: a free port. */
  port?: number;
}

/** At most two decimal digits, as money is kept in integer hundredths. */
const money = z
  .number()
  .refine((value) => Number.isSafeInteger(Math.round(value * 100)) && Math.abs(value * 100 - Math.round(value * 100)) < 1e-6, {
    message: 'must have at most two decimal digits',
  });

export const stubUserSchema = z.strictObject({
  wallet: money.refine((value) => value >= 0, { message: 'must not be negative' }).optional(),
  cert: z.boolean().optional(),
  teenager: z.boolean().optional(),
});

const paymentRequest = z.object({
  user: z.string().min(1),
  order: z.string().min(1),
  amount: money.refine((value) => value > 0, { message: 'must be positive' }),
});
const paymentStatusRequest = z.object({ order: z.string().min(1) });
const certificationRequest = z.object({ user: z.string().min(1) });

const MAX_BODY_BYTES = 64 * 1024;

interface Account {
  walletCents: number;
  cert: boolean;
  teenager: boolean;
}

type Reply = { status: number; json: unknown; headers?: Record<string, string> } | { status: number; text: string } | 'lose-answer';

type Body = { kind: 'json'; value: unknown } | { kind: 'text'; text: string } | { kind: 'empty' } | { kind: 'too-large' };

/** The provider's books: wallets and flags by user, and the first answer to each order id. */
class Ledger {
  private readonly accounts = new Map<string, Account>();
  /** The first answer given to each order id (`paid` false: wallet too low), with what it was for. */
  private readonly orders = new Map<string, { paid: boolean; user: string; amountCents: number }>();
  readonly charges: SsoStubCharge[] = [];

  account(user: string): Account {
    return this.accounts.get(user) ?? { walletCents: 0, cert: false, teenager: false };
  }

  setUser(user: string, data: Partial<SsoStubUser>): void {
    const parsed = stubUserSchema.safeParse(data);
    if (!parsed.success) throw new Error(`invalid SSO stub user ${JSON.stringify(user)}: ${z.prettifyError(parsed.error)}`);
    const current = this.account(user);
    this.accounts.set(user, {
      walletCents: parsed.data.wallet === undefined ? current.walletCents : toCents(parsed.data.wallet),
      cert: parsed.data.cert ?? current.cert,
      teenager: parsed.data.teenager ?? current.teenager,
    });
  }

  /** Charges an order at most once: asked again, it answers as the first time. */
  pay(request: z.infer<typeof paymentRequest>): boolean {
    const first = this.orders.get(request.order);
    if (first !== undefined) return first.paid;
    const amountCents = toCents(request.amount);
    if (this.account(request.user).walletCents >= amountCents) this.charge(request.order, request.user, amountCents);
    else this.orders.set(request.order, { paid: false, user: request.user, amountCents });
    return this.orders.get(request.order)!.paid;
  }

  paymentState(order: string): 'paid' | 'unpaid' | 'unknown' {
    const first = this.orders.get(order);
    return first === undefined ? 'unknown' : first.paid ? 'paid' : 'unpaid';
  }

  changeMind(order: string): void {
    const first = this.orders.get(order);
    if (first === undefined || first.paid) throw new Error(`order ${order} was not refused`);
    if (this.account(first.user).walletCents < first.amountCents) throw new Error(`the wallet of ${first.user} cannot pay order ${order}`);
    this.charge(order, first.user, first.amountCents);
  }

  private charge(order: string, user: string, amountCents: number): void {
    this.accounts.set(user, { ...this.account(user), walletCents: this.account(user).walletCents - amountCents });
    this.orders.set(order, { paid: true, user, amountCents });
    this.charges.push({ order, user, amount: amountCents / 100 });
  }
}

/** The stub's HTTP side: faults first, then authentication, path, method and body, then the route. */
class StubHandler {
  readonly calls: SsoStubCall[] = [];
  faults: SsoStubFaults = {};
  stalled = 0;
  private readonly pendingDelays = new Set<NodeJS.Timeout>();
  private readonly routes: Map<string, (body: unknown) => Reply | Promise<Reply>>;

  constructor(
    private readonly ledger: Ledger,
    private readonly expectedAuthorization: Buffer | undefined,
  ) {
    this.routes = new Map<string, (body: unknown) => Reply | Promise<Reply>>([
      ['/app/payment', (body) => this.payment(body)],
      ['/app/payment/status', (body) => this.paymentStatus(body)],
      ['/app/cert', (body) => this.certification(body)],
    ]);
  }

  async handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    const path = new URL(request.url ?? '/', 'http://stub').pathname;
    const body = await readBody(request);
    const { traceparent, tracestate, baggage } = request.headers;
    this.calls.push({
      path,
      body: body.kind === 'json' ? body.value : body.kind === 'text' ? body.text : undefined,
      ...(typeof traceparent === 'string' ? { traceparent } : {}),
      ...(typeof tracestate === 'string' ? { tracestate } : {}),
      ...(typeof baggage === 'string' ? { baggage } : {}),
    });
    const result = await this.reply(request, path, body);
    if (this.faults.delayMs) await this.delay(this.faults.delayMs);
    if (response.destroyed) return;
    if (result === 'lose-answer') {
      request.socket.destroy();
    } else if ('text' in result) {
      response.writeHead(result.status, { 'content-type': 'text/html' }).end(result.text);
    } else {
      response.writeHead(result.status, { ...result.headers, 'content-type': 'application/json' });
      response.end(JSON.stringify(result.json));
    }
  }

  cancelDelays(): void {
    for (const timer of this.pendingDelays) clearTimeout(timer);
    this.pendingDelays.clear();
  }

  private reply(request: IncomingMessage, path: string, body: Body): Reply | Promise<Reply> {
    if (this.faults.down) return json(503, { status: false, message: 'service unavailable' });
    if (this.faults.garbage) return { status: 200, text: '<html>502 Bad Gateway</html>' };
    if (!this.isAuthorized(request.headers.authorization)) {
      return json(401, { status: false, message: 'unauthorized' }, { 'www-authenticate': 'Bearer' });
    }
    const route = this.routes.get(path);
    if (route === undefined) return json(404, { status: false, message: 'not found' });
    if (request.method !== 'POST') return json(405, { status: false, message: 'method not allowed' }, { allow: 'POST' });
    if (body.kind === 'too-large') return json(413, { status: false, message: 'the body is too large' });
    if (body.kind !== 'json') return json(400, { status: false, message: 'the body must be JSON' });
    return route(body.value);
  }

  private payment(body: unknown): Reply | Promise<Reply> {
    const request = paymentRequest.safeParse(body);
    if (!request.success) return invalid(request.error);
    const { stallMs } = this.faults;
    if (stallMs === undefined) return this.answerPayment(request.data);
    return this.stall(typeof stallMs === 'number' ? stallMs : stallMs(), () => this.answerPayment(request.data));
  }

  private paymentStatus(body: unknown): Reply {
    const request = paymentStatusRequest.safeParse(body);
    if (!request.success) return invalid(request.error);
    return json(200, { status: true, state: this.ledger.paymentState(request.data.order) });
  }

  private certification(body: unknown): Reply {
    const request = certificationRequest.safeParse(body);
    if (!request.success) return invalid(request.error);
    const { cert, teenager } = this.ledger.account(request.data.user);
    return json(200, { status: true, cert, teenager });
  }

  private answerPayment(request: z.infer<typeof paymentRequest>): Reply {
    const paid = this.ledger.pay(request);
    if ((this.faults.loseNextPaymentAnswers ?? 0) > 0) {
      this.faults = { ...this.faults, loseNextPaymentAnswers: (this.faults.loseNextPaymentAnswers ?? 0) - 1 };
      return 'lose-answer';
    }
    return json(200, { status: true, type: paid });
  }

  private async stall(ms: number, act: () => Reply): Promise<Reply> {
    this.stalled += 1;
    await this.delay(ms);
    this.stalled -= 1;
    return act();
  }

  private isAuthorized(header: string | undefined): boolean {
    if (this.expectedAuthorization === undefined) return /^Bearer \S+$/.test(header ?? '');
    const given = Buffer.from(header ?? '');
    return given.length === this.expectedAuthorization.length && timingSafeEqual(given, this.expectedAuthorization);
  }

  private delay(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.pendingDelays.delete(timer);
        resolve();
      }, ms);
      this.pendingDelays.add(timer);
    });
  }
}

export async function startSsoStub(options: SsoStubOptions): Promise<SsoStub> {
  if (options.secret === '') throw new Error('the SSO stub needs a non-empty secret');
  const ledger = new Ledger();
  for (const [user, data] of Object.entries(options.users ?? {})) ledger.setUser(user, data);
  const handler = new StubHandler(ledger, options.secret === undefined ? undefined : Buffer.from(`Bearer ${options.secret}`));
  const server = createServer((request, response) => {
    // Only a request cut off while its body was read ends up here; there is no one left to answer.
    handler.handle(request, response).catch(() => request.socket.destroy());
  });
  const host = options.host ?? '127.0.0.1';
  server.listen(options.port ?? 0, host);
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    wallet: (user) => ledger.account(user).walletCents / 100,
    setUser: (user, data) => ledger.setUser(user, data),
    setFaults(next) {
      handler.faults = { ...next };
    },
    calls: handler.calls,
    paidOrders: () => ledger.charges.map((charged) => charged.order),
    charges: () => [...ledger.charges],
    paymentState: (order) => ledger.paymentState(order),
    stalled: () => handler.stalled,
    changeMind: (order) => ledger.changeMind(order),
    async close() {
      handler.cancelDelays();
      const closed = once(server, 'close');
      server.close();
      server.closeAllConnections();
      await closed;
    },
  };
}

function toCents(amount: number): number {
  return Math.round(amount * 100);
}

function json(status: number, body: unknown, headers?: Record<string, string>): Reply {
  return headers === undefined ? { status, json: body } : { status, json: body, headers };
}

function invalid(error: z.ZodError): Reply {
  return json(400, { status: false, message: z.prettifyError(error) });
}

async function readBody(request: IncomingMessage): Promise<Body> {
  const chunks: Buffer[] = [];
  let size = 0;
  // An oversized body is still read to its end, so that the answer can be delivered.
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size <= MAX_BODY_BYTES) chunks.push(chunk as Buffer);
  }
  if (size > MAX_BODY_BYTES) return { kind: 'too-large' };
  if (size === 0) return { kind: 'empty' };
  const text = Buffer.concat(chunks).toString('utf8');
  try {
    return { kind: 'json', value: JSON.parse(text) };
  } catch {
    return { kind: 'text', text };
  }
}
