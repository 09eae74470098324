/**
 * What `make` builds from a metric's children for one set of label values, made once per set and
 * kept, so that an observation builds no labels object (prom-client still hashes the labels as it
 * records each one). For label values that are bounded (routes, statuses, bounded operation
 * names, command names): each set stays.
 */
export function childrenPerLabelSet<Labels extends readonly string[], Children>(
  make: (...labels: Labels) => Children,
): (...labels: Labels) => Children {
  const made = new Map<string, Children>();
  return (...labels) => {
    const key = labels.join('\u0000');
    let children = made.get(key);
    if (children === undefined) made.set(key, (children = make(...labels)));
    return children;
  };
}
