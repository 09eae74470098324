/**
 * Values that come from a request (GraphQL operation names) become metric labels and log
 * fields; these bounds keep any caller from growing `/metrics` or a log line without limit.
 */

/** Longer operation names are cut to this many characters, the last one an ellipsis. */
export const MAX_OPERATION_NAME_LENGTH = 64;
/** Distinct operation names labelled on their own, besides those known at start; later ones count as `other`. */
export const MAX_UNKNOWN_OPERATION_NAMES = 50;

/** The operation name as a log field or label: at most `MAX_OPERATION_NAME_LENGTH` characters. */
export function boundedOperationName(name: string): string {
  return name.length <= MAX_OPERATION_NAME_LENGTH ? name : `${name.slice(0, MAX_OPERATION_NAME_LENGTH - 1)}…`;
}

/**
 * Label values for operation names: those known at start (the REST layer's operations, the
 * trusted documents) always have their own; other names get one until `limit` of them were
 * seen, so names a caller makes up can neither grow the metrics nor crowd out the known ones.
 */
export class OperationNameLabels {
  private readonly known: ReadonlySet<string>;
  private readonly seen = new Set<string>();

  constructor(
    knownNames: Iterable<string>,
    private readonly limit = MAX_UNKNOWN_OPERATION_NAMES,
  ) {
    this.known = new Set([...knownNames].map(boundedOperationName));
  }

  label(name: string): string {
    const bounded = boundedOperationName(name);
    if (this.known.has(bounded) || this.seen.has(bounded)) return bounded;
    if (this.seen.size >= this.limit) return 'other';
    this.seen.add(bounded);
    return bounded;
  }
}
