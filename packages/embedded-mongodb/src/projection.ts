import { BSON, type Document } from 'bson';
import { Query } from 'mingo';
import { CommandError, ErrorCode } from './errors.js';
import { MINGO_OPTIONS } from './matching.js';
import { asBuffer, documentFromElements, rawElements } from './raw-bson.js';
import { isPlainObject, promoted, typed } from './values.js';

export type Projector = (raw: Buffer) => Buffer;

/**
 * Compiles a find projection. Inclusion or exclusion of top-level fields (by
 * far the most common) copies elements byte for byte; anything else (dotted
 * paths, `$slice`, `$elemMatch`, positional `$`, expressions) goes through mingo.
 */
export function compileProjection(projection: unknown, filter: Document): Projector | undefined {
  if (projection === undefined || projection === null) return undefined;
  if (!isPlainObject(projection)) throw new CommandError(ErrorCode.TypeMismatch, "Expected field projection to be of type object");
  const entries = Object.entries(projection);
  if (entries.length === 0) return undefined;

  const simple = entries.every(
    ([field, v]) => !field.includes('.') && !field.startsWith('$') && (typeof v === 'number' || typeof v === 'boolean'),
  );
  if (!simple) return mingoProjector(projection, filter);

  let inclusion: boolean | undefined;
  let keepId = true;
  const fields = new Set<string>();
  for (const [field, value] of entries) {
    const include = Boolean(value);
    if (field === '_id') {
      keepId = include;
      continue;
    }
    if (inclusion === undefined) inclusion = include;
    else if (inclusion !== include) {
      throw new CommandError(
        include ? 31253 : ErrorCode.Location31254,
        include
          ? `Cannot do inclusion on field ${field} in exclusion projection`
          : `Cannot do exclusion on field ${field} in inclusion projection`,
      );
    }
    fields.add(field);
  }
  // Only `_id` was mentioned: `{_id: 1}` keeps just _id, `{_id: 0}` drops it.
  inclusion ??= keepId;
  const keep = (name: string): boolean =>
    name === '_id' ? keepId : inclusion ? fields.has(name) : !fields.has(name);
  return (raw) => documentFromElements(raw, rawElements(raw).filter((e) => keep(e.name)));
}

function mingoProjector(projection: Document, filter: Document): Projector {
  // Positional and $elemMatch projections match against the document, which needs the promoted view.
  const matches = Object.entries(projection).some(([field, v]) => field.endsWith('.$') || (isPlainObject(v) && '$elemMatch' in v));
  const query = new Query(matches ? filter : {}, MINGO_OPTIONS);
  return (raw) => {
    const doc = matches ? promoted(raw) : typed(raw);
    const projected = (query.find([doc], projection).next() ?? {}) as Document;
    const { _id, ...rest } = projected;
    return asBuffer(BSON.serialize(_id === undefined ? rest : { _id, ...rest }));
  };
}
