import { getVariableValues, type GraphQLSchema, type OperationDefinitionNode } from 'graphql';

/**
 * One execution per event for the subscriptions that would run it alike, its result handed to
 * each of them: a thousand subscribers of one user cost one execution per change, not a thousand.
 *
 * Two subscriptions run an event alike when they get the same event object (a change feed hands
 * one object to every listener of a user; see `balanceUpdates` and `conversationChanges`) and have
 * the same sharing key: the same operation (the document cache's node: the same text gives the
 * same node), the same coerced variables and the same caller. Anything else runs on its own. The
 * first subscription to reach an event runs it; the others take its answer (formatted once, its
 * internal errors naming the request of the subscription that ran it), for as long as the event
 * object lives (until the last of them has taken it from its inbox).
 */
export class SharedExecutions<Answer> {
  private readonly byEvent = new WeakMap<object, Map<string, Promise<Answer>>>();
  /** A number per operation node, for the keys: two nodes are two operations, even with the same text. */
  private readonly operationNumbers = new WeakMap<OperationDefinitionNode, number>();
  private operationsSeen = 0;

  constructor(private readonly schema: GraphQLSchema) {}

  /**
   * The sharing key of a subscription's executions: its operation, its variables once coerced,
   * and its caller's user. Undefined (nothing shared) for variables that do not coerce.
   */
  keyOf(operation: OperationDefinitionNode, variables: Record<string, unknown> | undefined, userId: number): string | undefined {
    const coerced = getVariableValues(this.schema, operation.variableDefinitions ?? [], variables ?? {});
    if (coerced.errors !== undefined) return undefined;
    let number = this.operationNumbers.get(operation);
    if (number === undefined) this.operationNumbers.set(operation, (number = ++this.operationsSeen));
    // Coerced values follow the operation's own order of variables and of input fields: one text per value.
    return JSON.stringify([number, userId, coerced.coerced]);
  }

  /** The answer to `event` for the subscriptions of `key`: the one `execute` makes, first come. */
  run(event: unknown, key: string | undefined, execute: () => Promise<Answer>): Promise<Answer> {
    if (key === undefined || typeof event !== 'object' || event === null) return execute();
    let results = this.byEvent.get(event);
    if (results === undefined) this.byEvent.set(event, (results = new Map()));
    let result = results.get(key);
    if (result === undefined) results.set(key, (result = execute()));
    return result;
  }
}

/** The JSON text of each answer made so far, for as long as the answer lives (see `answerText`). */
const answerTexts = new WeakMap<object, string>();

/**
 * The JSON text of an answer, made once for every subscription that shares it: an event's
 * answer is one object for all of them (`SharedExecutions.run`), and each door writes this text
 * into its own frame (graphql-ws's `next` message, graphql-sse's `next` event, a multipart part)
 * where its library would have serialised the answer again for each subscriber. The text is
 * `JSON.stringify(answer)`'s, so that each frame stays byte for byte what the library writes.
 */
export function answerText(answer: object): string {
  let text = answerTexts.get(answer);
  if (text === undefined) answerTexts.set(answer, (text = JSON.stringify(answer)));
  return text;
}
