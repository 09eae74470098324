import type { Document } from 'bson';

import { CommandError, ErrorCode, refusal } from './errors.js';
import { compileFilter, type Matcher } from './matcher.js';
import { isNumber, isPlainObject, numberOf, typeName } from './values.js';

export type ValidationLevel = 'strict' | 'moderate' | 'off';
export type ValidationAction = 'error' | 'warn';

export interface Validation {
  validator: Document;
  matcher: Matcher;
  level: ValidationLevel;
  action: ValidationAction;
}

/** What a collection was created with, checked and ready to enforce. */
export interface CollectionSettings {
  capped?: { size: number; max?: number };
  validation?: Validation;
  /** changeStreamPreAndPostImages: change streams may show documents as they were before a change. */
  preImages: boolean;
  /** The options `listCollections` shows, as given. */
  shown: Document;
}

/** Fields `create` accepts besides its collection name and the generic ones. */
const CREATE_FIELDS = new Set([
  'capped',
  'size',
  'max',
  'validator',
  'validationLevel',
  'validationAction',
  'collation',
  'idIndex',
  'changeStreamPreAndPostImages',
  'viewOn',
  'pipeline',
  'timeseries',
  'expireAfterSeconds',
  'clusteredIndex',
  'encryptedFields',
  'storageEngine',
  'indexOptionDefaults',
  'autoIndexId',
  'flags',
  'temp',
]);

export function defaultSettings(): CollectionSettings {
  return { preImages: false, shown: {} };
}

/** Checks `create`'s options as MongoDB does; refuses the ones the engine does not implement. */
export function parseCreateOptions(options: Document): CollectionSettings {
  for (const field of Object.keys(options)) {
    if (!CREATE_FIELDS.has(field)) throw new CommandError(40415, `BSON field 'create.${field}' is an unknown field.`);
  }
  if (options.viewOn !== undefined || options.pipeline !== undefined) throw refusal(ErrorCode.InvalidOptions, 'views');
  if (options.timeseries !== undefined) throw refusal(ErrorCode.InvalidOptions, 'time series collections');
  if (options.clusteredIndex !== undefined) throw refusal(ErrorCode.InvalidOptions, 'clustered collections');
  if (options.expireAfterSeconds !== undefined) {
    throw new CommandError(
      ErrorCode.InvalidOptions,
      "'expireAfterSeconds' is only supported on time-series collections or when the 'clusteredIndex' option is set",
    );
  }
  if (options.encryptedFields !== undefined) throw refusal(ErrorCode.InvalidOptions, 'queryable encryption');
  for (const field of ['storageEngine', 'indexOptionDefaults', 'autoIndexId', 'flags', 'temp']) {
    if (options[field] !== undefined) throw refusal(ErrorCode.InvalidOptions, `the create option '${field}'`);
  }
  checkCollation(options.collation);
  if (options.idIndex !== undefined) checkIdIndex(options.idIndex);

  const settings = defaultSettings();
  settings.shown = options;
  if (truthy(options.capped)) {
    if (options.size === undefined) throw new CommandError(ErrorCode.InvalidOptions, "the 'size' field is required when 'capped' is true");
    const size = positiveNumber(options.size, 'size');
    const max = options.max === undefined ? undefined : positiveNumber(options.max, 'max');
    settings.capped = { size: cappedSize(size), ...(max !== undefined && max > 0 ? { max } : {}) };
  }
  settings.validation = parseValidation(options, undefined);
  settings.preImages = parsePreImages(options.changeStreamPreAndPostImages) ?? false;
  return settings;
}

/** MongoDB stores a capped size rounded up to a multiple of 256, at least 4096 bytes. */
function cappedSize(size: number): number {
  return Math.max(4096, Math.ceil(size / 256) * 256);
}

function truthy(value: unknown): boolean {
  return isNumber(value) ? numberOf(value) !== 0 : Boolean(value);
}

function positiveNumber(value: unknown, field: string): number {
  if (!isNumber(value))
    throw new CommandError(
      ErrorCode.TypeMismatch,
      `BSON field 'create.${field}' is the wrong type '${typeName(value)}', expected types '[long, int, decimal, double]'`,
    );
  const n = numberOf(value);
  if (n < 0) throw new CommandError(51024, `BSON field '${field}' value must be >= 0, actual value '${n}'`);
  return n;
}

/** Only the binary ("simple") collation exists here. */
export function checkCollation(collation: unknown): void {
  if (collation === undefined || collation === null) return;
  if (!isPlainObject(collation))
    throw new CommandError(ErrorCode.TypeMismatch, "BSON field 'collation' is the wrong type, expected type 'object'");
  if (collation.locale === 'simple' && Object.keys(collation).length === 1) return;
  throw refusal(ErrorCode.BadValue, `collation ${JSON.stringify(collation)}`, 'only the binary { locale: "simple" } collation is');
}

function checkIdIndex(spec: unknown): void {
  if (!isPlainObject(spec) || !isPlainObject(spec.key) || Object.keys(spec.key).join() !== '_id' || numberOf(spec.key._id) !== 1) {
    throw new CommandError(ErrorCode.BadValue, "The field 'key' for an _id index must be {_id: 1}");
  }
}

/** The validation settings a `create` or `collMod` asks for, over `current` ones (collMod changes some fields only). */
export function parseValidation(options: Document, current: Validation | undefined): Validation | undefined {
  const { validator, validationLevel, validationAction } = options;
  if (validationLevel !== undefined && !['strict', 'moderate', 'off'].includes(validationLevel as string)) {
    throw new CommandError(
      ErrorCode.BadValue,
      `Enumeration value '${String(validationLevel)}' for field 'validationLevel' is not a valid value.`,
    );
  }
  if (validationAction !== undefined && !['error', 'warn'].includes(validationAction as string)) {
    if (validationAction === 'errorAndLog') throw refusal(ErrorCode.InvalidOptions, "validationAction 'errorAndLog'");
    throw new CommandError(
      ErrorCode.BadValue,
      `Enumeration value '${String(validationAction)}' for field 'validationAction' is not a valid value.`,
    );
  }
  if (validator !== undefined && !isPlainObject(validator)) {
    throw new CommandError(
      ErrorCode.TypeMismatch,
      `BSON field 'validator' is the wrong type '${typeName(validator)}', expected type 'object'`,
    );
  }
  const filter = (validator as Document | undefined) ?? current?.validator;
  if (filter === undefined && validationLevel === undefined && validationAction === undefined) return current;
  return {
    validator: filter ?? {},
    matcher: compileFilter(filter ?? {}),
    level: (validationLevel as ValidationLevel | undefined) ?? current?.level ?? 'strict',
    action: (validationAction as ValidationAction | undefined) ?? current?.action ?? 'error',
  };
}

export function parsePreImages(value: unknown): boolean | undefined {
  if (value === undefined) return undefined;
  if (!isPlainObject(value) || typeof value.enabled !== 'boolean' || Object.keys(value).length !== 1) {
    throw new CommandError(40414, "BSON field 'changeStreamPreAndPostImages.enabled' is missing but a required field");
  }
  return value.enabled;
}
