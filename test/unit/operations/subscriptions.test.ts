import type { FormattedExecutionResult } from 'graphql';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';

import { eventsLost, persistedQueryNotFound } from '../../../src/errors.js';
import { answerOnce, type LiveResults, type Refusal, rootFieldOf, SubscriptionFailure } from '../../../src/operations/subscriptions.js';
import { conversation, fakeWorld, metricValue, testPipeline } from '../support/fakes.js';

const QUOTA = 'subscription Balance { quota }';

function live(options: Parameters<typeof testPipeline>[0] = {}) {
  const setup = testPipeline({ world: fakeWorld([conversation(1, 1), conversation(1, 2)], { 1: 1_000_000 }), ...options });
  const subscribe = (
    query: string,
    extra: { userId?: number; door?: 'websocket' | 'sse' | 'multipart'; variables?: Record<string, unknown> } = {},
  ) =>
    setup.pipeline.subscribe(
      { query, variables: extra.variables },
      { caller: { userId: extra.userId ?? 1 }, door: extra.door ?? 'websocket', requestId: 'subscription-1' },
    );
  return { ...setup, subscribe };
}

function opened(answer: LiveResults | Refusal): LiveResults {
  if ('refused' in answer) throw new Error(`refused: ${JSON.stringify(answer.refused)}`);
  return answer;
}

function refusedWith(answer: LiveResults | Refusal) {
  if (!('refused' in answer)) throw new Error('expected a refusal');
  return answer.refused;
}

/** Lets the subscription's `next` reach the source (the stream opens asynchronously). */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('the subscribe verb', () => {
  it('answers each event of the source, run through the execute stage and formatted', async () => {
    const { subscribe, world } = live();
    const results = opened(await subscribe(QUOTA));
    expect(world.balanceEvents.open).toBe(1);
    const next = results.next();
    world.balanceEvents.push({ points: 3 });
    expect(await next).toEqual({ value: { data: { quota: 3 } }, done: false });
    world.balanceEvents.push({ points: 4.25 });
    expect(await results.next()).toEqual({ value: { data: { quota: 4.25 } }, done: false });
    await results.return();
  });

  it('closes the source when the door calls return(), once however often it is called', async () => {
    const { subscribe, world } = live();
    const results = opened(await subscribe(QUOTA));
    await results.return();
    await results.return();
    expect(await results.next()).toEqual({ value: undefined, done: true });
    expect(world.balanceEvents.closed).toBe(1);
    expect(world.balanceEvents.open).toBe(0);
  });

  it('resolves an event’s fields with a fresh context: a conversation event reads the conversation', async () => {
    const { subscribe, world } = live();
    const results = opened(
      await subscribe('subscription { conversationEvents { kind conversationId conversation { name } deletedConversationId } }'),
    );
    const next = results.next();
    await settle();
    world.conversationEvents.push({ kind: 'UPDATED', userId: 2, number: 1 });
    world.conversationEvents.push({ kind: 'UPDATED', userId: 1, number: 2 });
    const { value } = (await next) as IteratorYieldResult<FormattedExecutionResult>;
    expect(value.data).toMatchObject({
      conversationEvents: { kind: 'UPDATED', conversation: { name: 'conversation 2' }, deletedConversationId: null },
    });
    await results.return();
  });

  it('runs one event once for the subscriptions of one caller with the same operation and variables', async () => {
    const { subscribe, world } = live();
    const first = opened(await subscribe(QUOTA));
    const second = opened(await subscribe(QUOTA));
    const other = opened(await subscribe('subscription Other { quota }'));
    const answers = [first.next(), second.next(), other.next()];
    world.balanceEvents.push({ points: 5 });
    const [a, b, c] = await Promise.all(answers);
    expect(a!.value).toEqual({ data: { quota: 5 } });
    expect(b!.value).toBe(a!.value);
    expect(c!.value).toEqual(a!.value);
    expect(c!.value).not.toBe(a!.value);
    await Promise.all([first.return(), second.return(), other.return()]);
  });

  it('counts the events sent per field and door, and the subscriptions running', async () => {
    const { subscriptionMetrics, subscribe, world } = live();
    const results = opened(await subscribe(QUOTA, { door: 'sse' }));
    const next = results.next();
    world.balanceEvents.push({ points: 1 });
    await next;
    expect(subscriptionMetrics.counts().subscriptions).toBe(1);
    const registry = new Registry();
    subscriptionMetrics.all.forEach((metric) => registry.registerMetric(metric));
    expect(await metricValue(registry, 'graphql_subscription_events_total', { field: 'quota', transport: 'sse' })).toBe(1);
    expect(await metricValue(registry, 'graphql_subscriptions_active', { field: 'quota', transport: 'sse' })).toBe(1);
    await results.return();
    expect(subscriptionMetrics.counts().subscriptions).toBe(0);
    expect(await metricValue(registry, 'graphql_subscriptions_active', { field: 'quota', transport: 'sse' })).toBe(0);
  });

  it('refuses a query or a mutation, naming the door and where to send it', async () => {
    const { subscribe } = live();
    expect(refusedWith(await subscribe('{ quota }', { door: 'sse' }))).toEqual([
      {
        message: 'only subscriptions are served over Server-Sent Events; send queries and mutations to POST /graphql',
        extensions: { code: 'BAD_REQUEST' },
      },
    ]);
    expect(refusedWith(await subscribe('mutation { deleteAllConversations { ok } }', { door: 'multipart' }))[0]!.message).toMatch(
      /over multipart HTTP subscriptions;/,
    );
  });

  it('refuses a request without a document', async () => {
    const { pipeline } = live();
    const answer = await pipeline.subscribe({}, { caller: { userId: 1 }, door: 'websocket', requestId: 'r' });
    expect(refusedWith(answer)).toEqual([{ message: 'a subscription must carry a GraphQL document', extensions: { code: 'BAD_REQUEST' } }]);
  });

  it('refuses an invalid document with its validation errors, and a text that does not parse', async () => {
    const { subscribe } = live();
    expect(refusedWith(await subscribe('subscription { nope }'))[0]!.extensions).toEqual({ code: 'GRAPHQL_VALIDATION_FAILED' });
    expect(refusedWith(await subscribe('subscription {'))[0]!.extensions).toEqual({ code: 'GRAPHQL_PARSE_FAILED' });
  });

  it('hides what an invalid document got wrong in production', async () => {
    const { subscribe } = live({ production: true });
    expect(refusedWith(await subscribe('subscription { nope alsoNope }'))).toEqual([
      { message: 'the operation is not valid (the reason is shown outside production)', extensions: { code: 'GRAPHQL_VALIDATION_FAILED' } },
    ]);
  });

  it('answers the trusted-documents rule’s refusal', async () => {
    const { subscribe } = live({
      documentOf: () => {
        throw persistedQueryNotFound();
      },
    });
    expect(refusedWith(await subscribe(QUOTA))[0]!.extensions).toEqual({ code: 'PERSISTED_QUERY_NOT_FOUND' });
  });

  it('caps the subscriptions one caller runs at once, over every door, and gives the place back when one ends', async () => {
    const { subscribe } = live({ subscriptionsPerCaller: 2 });
    const first = opened(await subscribe(QUOTA, { door: 'websocket' }));
    opened(await subscribe(QUOTA, { door: 'sse' }));
    expect(refusedWith(await subscribe(QUOTA, { door: 'multipart' }))).toEqual([
      {
        message: 'too many subscriptions: at most 2 at once per caller; complete one first',
        extensions: { code: 'TOO_MANY_SUBSCRIPTIONS' },
      },
    ]);
    opened(await subscribe(QUOTA, { userId: 2 }));
    await first.return();
    opened(await subscribe(QUOTA, { door: 'multipart' }));
  });

  it('does not count a refused subscription against the cap', async () => {
    const { subscribe } = live({ subscriptionsPerCaller: 1 });
    refusedWith(await subscribe('subscription { nope }'));
    refusedWith(await subscribe('{ quota }'));
    opened(await subscribe(QUOTA));
  });

  it('answers once, then completes, when the source cannot open (no change streams), and gives the place back', async () => {
    const { subscribe, world } = live({ subscriptionsPerCaller: 1 });
    world.subscriptionsUnavailable = true;
    const results = opened(await subscribe(QUOTA));
    const first = await results.next();
    expect(first.value).toMatchObject({
      errors: [
        {
          message: 'subscriptions are not available: the database has no change streams',
          extensions: { code: 'SUBSCRIPTIONS_UNAVAILABLE' },
        },
      ],
    });
    expect(await results.next()).toEqual({ value: undefined, done: true });
    world.subscriptionsUnavailable = false;
    opened(await subscribe(QUOTA));
  });

  it('rejects next() with a SubscriptionFailure carrying the formatted errors when the source fails', async () => {
    const { subscribe, world } = live();
    const results = opened(await subscribe(QUOTA));
    const next = results.next();
    await settle();
    world.balanceEvents.fail(eventsLost('the change history was lost'));
    const failure = await next.then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(SubscriptionFailure);
    expect((failure as SubscriptionFailure).errors).toEqual([
      {
        message: 'events were lost (the change history was lost): load the list again and subscribe again',
        extensions: { code: 'EVENTS_LOST' },
      },
    ]);
  });

  it('masks an unexpected failure of the source in production, naming the subscription’s request', async () => {
    const { subscribe, world } = live({ production: true });
    const results = opened(await subscribe(QUOTA));
    const next = results.next();
    await settle();
    world.balanceEvents.fail(new Error('driver internals'));
    const failure = (await next.catch((error: unknown) => error)) as SubscriptionFailure;
    expect(failure.errors).toEqual([
      { message: 'internal server error', extensions: { code: 'INTERNAL_SERVER_ERROR', requestId: 'subscription-1' } },
    ]);
  });
});

describe('resolve', () => {
  const isSubscription = (pipeline: ReturnType<typeof live>['pipeline'], request: Parameters<typeof pipeline.resolve>[0]) =>
    pipeline.resolve(request) !== undefined;

  it('tells a valid subscription from anything else', () => {
    const { pipeline } = live();
    expect(isSubscription(pipeline, { query: QUOTA })).toBe(true);
    expect(isSubscription(pipeline, { query: '{ quota }' })).toBe(false);
    expect(isSubscription(pipeline, { query: 'subscription { nope }' })).toBe(false);
    expect(isSubscription(pipeline, {})).toBe(false);
  });

  it('picks the operation named, in a document of several', () => {
    const { pipeline } = live();
    const query = 'query Q { quota } subscription S { quota }';
    expect(isSubscription(pipeline, { query, operationName: 'S' })).toBe(true);
    expect(isSubscription(pipeline, { query, operationName: 'Q' })).toBe(false);
  });

  it('is undefined when the trusted-documents rule refuses the request', () => {
    const { pipeline } = live({
      documentOf: () => {
        throw persistedQueryNotFound();
      },
    });
    expect(isSubscription(pipeline, { query: QUOTA })).toBe(false);
  });

  it('applies the trusted-documents rule and the document stage once for a subscription that then runs', async () => {
    let rule = 0;
    const { pipeline, world } = live({
      documentOf: (reference) => {
        rule += 1;
        return typeof reference.query === 'string' ? reference.query : undefined;
      },
    });
    const stage = pipeline.documents.document.bind(pipeline.documents);
    let lookups = 0;
    pipeline.documents.document = (...args) => ((lookups += 1), stage(...args));
    const subscription = pipeline.resolve({ query: QUOTA, operationName: 'Balance' });
    if (subscription === undefined) throw new Error('expected a subscription');
    const results = opened(await pipeline.subscribe(subscription, { caller: { userId: 1 }, door: 'multipart', requestId: 'request-1' }));
    const next = results.next();
    world.balanceEvents.push({ points: 5 });
    expect(await next).toEqual({ value: { data: { quota: 5 } }, done: false });
    await results.return();
    expect({ rule, lookups }).toEqual({ rule: 1, lookups: 1 });
  });
});

describe('answerOnce and rootFieldOf', () => {
  it('answerOnce yields its answer, then is done; return() before reading drops it', async () => {
    const once = answerOnce({ data: { quota: 1 } });
    expect(await once.next()).toEqual({ value: { data: { quota: 1 } }, done: false });
    expect(await once.next()).toEqual({ value: undefined, done: true });
    const dropped = answerOnce({ data: { quota: 1 } });
    await dropped.return();
    expect(await dropped.next()).toEqual({ value: undefined, done: true });
  });

  it('rootFieldOf finds the field a subscription selects, through fragments', async () => {
    const { parse, getOperationAST } = await import('graphql');
    for (const [text, field] of [
      ['subscription { quota }', 'quota'],
      ['subscription { ... on Subscription { conversationEvents { kind } } }', 'conversationEvents'],
      ['subscription { ...F } fragment F on Subscription { quota }', 'quota'],
    ] as const) {
      const document = parse(text);
      expect(rootFieldOf(getOperationAST(document)!, document)).toBe(field);
    }
  });
});

describe('the observation of subscriptions', () => {
  it('counts the subscribe, and each executed event, as operations of the door', async () => {
    const { subscribe, world, registry } = live();
    const results = opened(await subscribe(QUOTA));
    for (const points of [1, 2]) {
      const next = results.next();
      world.balanceEvents.push({ points });
      await next;
    }
    await results.return();
    expect(
      await metricValue(registry, 'graphql_operations_total', {
        operation_name: 'Balance',
        operation_type: 'subscription',
        result: 'success',
      }),
    ).toBe(3);
  });
});
