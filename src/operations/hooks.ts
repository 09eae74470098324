import type { DocumentNode, ExecutionResult, OperationDefinitionNode } from 'graphql';

import type { Door } from '../observability/labels.js';
import type { OperationCaller } from './operation-context.js';

/** An operation about to run (or running), as the pipeline tells its hooks. */
export interface OperationInfo {
  /** Where it came in: `graphql`, `rest`, `websocket`, `sse` or `multipart`. */
  readonly door: Door;
  readonly requestId: string;
  readonly caller: OperationCaller;
  /** Its document, parsed and validated (the document stage's, shared by every request with the same text). */
  readonly document: DocumentNode;
  readonly operation: OperationDefinitionNode;
  readonly variables: Record<string, unknown> | undefined;
}

/**
 * An extension of the pipeline, registered once (`ServiceOptions.operationHooks`), that sees every
 * operation of every door. `onOperation` is told each operation that passed the document stage and
 * the limits, before it runs: a failure it throws (`errors.ts`) refuses the operation, as the limits
 * refuse one. `onResult` is told what it answered, before the format stage: for a query or a
 * mutation its one result; for a subscription the result of each event it ran (once for the
 * subscriptions of a caller that share its operation and variables), or its one answer when its
 * stream could not open. A hook must not change what it is given.
 */
export interface OperationHook {
  onOperation?(info: OperationInfo): void | Promise<void>;
  onResult?(info: OperationInfo, result: ExecutionResult): void | Promise<void>;
}

/** The pipeline's hooks, in the order they were given: each is told in turn, and the first refusal ends the turn. */
export class OperationHooks {
  private readonly starting: readonly OperationHook[];
  private readonly answering: readonly OperationHook[];

  constructor(hooks: readonly OperationHook[]) {
    this.starting = hooks.filter((hook) => hook.onOperation !== undefined);
    this.answering = hooks.filter((hook) => hook.onResult !== undefined);
  }

  /** Whether any hook is told anything: with none, the pipeline makes no `OperationInfo` at all. */
  get none(): boolean {
    return this.starting.length === 0 && this.answering.length === 0;
  }

  /** Tells each hook's `onOperation`; rejects with the first refusal. Nothing to wait for without one. */
  started(info: OperationInfo): Promise<void> | undefined {
    return this.starting.length === 0 ? undefined : this.tellEach(this.starting, (hook) => hook.onOperation!(info));
  }

  /** Tells each hook's `onResult`. Nothing to wait for without one. */
  answered(info: OperationInfo, result: ExecutionResult): Promise<void> | undefined {
    return this.answering.length === 0 ? undefined : this.tellEach(this.answering, (hook) => hook.onResult!(info, result));
  }

  private async tellEach(hooks: readonly OperationHook[], tell: (hook: OperationHook) => void | Promise<void>): Promise<void> {
    for (const hook of hooks) await tell(hook);
  }
}
