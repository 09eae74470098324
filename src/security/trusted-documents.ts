import { readFile } from 'node:fs/promises';

import type { RequestHandler } from 'express';
import { type DocumentNode, Kind, parse } from 'graphql';

import { ConfigError } from '../config.js';
import { badRequest, persistedQueryNotFound, persistedQueryOnly } from '../errors.js';
import { documentIdOf } from '../operations/documents.js';
import { isRecord } from '../shared/is-record.js';

/**
 * How a GraphQL request names the document it runs, over HTTP (a POST body, GET's parameters)
 * or WebSocket (a subscribe message's payload): by its text (`query`), or by the id of a
 * trusted document, either as `documentId` or as Apollo Client's persisted-query hash
 * (`extensions.persistedQuery.sha256Hash`).
 */
export interface DocumentReference {
  query?: unknown;
  documentId?: unknown;
  extensions?: unknown;
}

/** Documents held by the SHA-256 of their text (the pipeline's document cache), where automatic persisted queries are registered. */
export interface RegisteredDocuments {
  /** The text held under `id`, if it is still held. */
  textOf(id: string): string | undefined;
}

/**
 * The documents this gateway trusts, by id: those of the `PERSISTED_DOCUMENTS` file and the REST
 * layer's own operations (so a REST sidecar can name them by id). With `only`, a request must name
 * one by id; its text is refused whatever it is.
 *
 * Without `only`, `/graphql` also serves Apollo's automatic persisted queries (what
 * `createPersistedQueryLink` sends): a persisted-query hash that names no trusted document is left
 * to Apollo Server's own protocol (`graphql/apollo.ts`), whose store of registered texts is the
 * pipeline's one document cache.
 */
export class TrustedDocuments {
  private constructor(
    private readonly texts: ReadonlyMap<string, string>,
    readonly only: boolean,
    /** The operation names of the file's documents, known at start. */
    readonly operationNames: readonly string[],
  ) {}

  /** Trusts `builtIn` (the REST layer's operations, by their text) and, when given, the documents of `source`. */
  static async load(source: { file: string; only: boolean } | undefined, builtIn: readonly string[]): Promise<TrustedDocuments> {
    const fromFile =
      source === undefined ? { texts: [], operationNames: [] } : parseDocumentsFile(source.file, await readDocumentsFile(source.file));
    const texts = new Map([...fromFile.texts, ...builtIn.map((text) => [documentIdOf(text), text] as const)]);
    return new TrustedDocuments(texts, source?.only ?? false, fromFile.operationNames);
  }

  /**
   * The text of the document a request runs, or undefined when it names none (GraphQL's own
   * answer to an empty request then applies). Throws `PERSISTED_QUERY_ONLY` for a text where only
   * trusted documents run, `PERSISTED_QUERY_NOT_FOUND` for an id no trusted document has. A request
   * with both a text and an id runs its text (as Apollo Client sends them after an unknown id). An
   * empty `query` is no text: graphql-ws requires the field, so a subscribe message naming a
   * trusted document by id carries `query: ""`. Without `only`, a persisted-query hash that no
   * trusted document has names the text `registered` holds under it, if any (the subscription
   * doors; `/graphql` leaves such a request to Apollo Server, `isAutomaticPersistedQuery`).
   */
  documentFor(request: DocumentReference, registered?: RegisteredDocuments): string | undefined {
    const carriesText = request.query !== undefined && request.query !== null && request.query !== '';
    if (carriesText && this.only) throw persistedQueryOnly();
    const id = idOf(request);
    if (carriesText || id === undefined) return (request.query ?? undefined) as string | undefined;
    const text = this.texts.get(id) ?? (this.isAutomaticPersistedQuery(request) ? registered?.textOf(id) : undefined);
    if (text === undefined) throw persistedQueryNotFound();
    return text;
  }

  /**
   * Whether the request names its document as an automatic persisted query: never with `only`
   * (nothing is ever registered then), and only by a persisted-query hash (without a `documentId`)
   * that names no trusted document. `/graphql` leaves such a request to Apollo Server, which checks
   * a text sent with it against the hash, registers it, and runs a hash sent alone from what it registered.
   */
  isAutomaticPersistedQuery(request: DocumentReference): boolean {
    if (this.only || request.documentId !== undefined) return false;
    const hash = persistedQueryHashOf(request);
    return hash !== undefined && !this.texts.has(hash);
  }
}

function idOf(request: DocumentReference): string | undefined {
  return typeof request.documentId === 'string' ? request.documentId : persistedQueryHashOf(request);
}

function persistedQueryHashOf({ extensions }: DocumentReference): string | undefined {
  const hash = (extensions as { persistedQuery?: { sha256Hash?: unknown } } | null | undefined)?.persistedQuery?.sha256Hash;
  return typeof hash === 'string' ? hash : undefined;
}

async function readDocumentsFile(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    throw new ConfigError([`PERSISTED_DOCUMENTS cannot be read: ${(error as Error).message}`]);
  }
}

/**
 * The file's map of id → document: a JSON object of GraphQL documents by id. Its keys are taken
 * as they are: the SHA-256 of each text with `hashAlgorithm: 'sha256'`, the SHA-1 with the client
 * preset's default; clients send the same ids. Any entry that is not a GraphQL document stops the start.
 */
function parseDocumentsFile(file: string, content: string): { texts: [string, string][]; operationNames: string[] } {
  let entries: unknown;
  try {
    entries = JSON.parse(content);
  } catch {
    entries = undefined;
  }
  if (typeof entries !== 'object' || entries === null || Array.isArray(entries)) {
    throw new ConfigError([`PERSISTED_DOCUMENTS ${file} must be a JSON object mapping document ids to documents`]);
  }
  const problems: string[] = [];
  const texts: [string, string][] = [];
  const operationNames: string[] = [];
  for (const [id, text] of Object.entries(entries)) {
    const document = typeof text === 'string' ? parsedOrNull(text) : null;
    if (document === null) {
      problems.push(`PERSISTED_DOCUMENTS ${file}, entry ${id}: not a GraphQL document`);
      continue;
    }
    texts.push([id, text as string]);
    for (const definition of document.definitions) {
      if (definition.kind === Kind.OPERATION_DEFINITION && definition.name) operationNames.push(definition.name.value);
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return { texts, operationNames };
}

function parsedOrNull(text: string): DocumentNode | null {
  try {
    return parse(text);
  } catch {
    return null;
  }
}

/**
 * The `/graphql` step, after the JSON body is read: applies `documentFor` to the request (each
 * operation of a batch alike) and hands Apollo Server the text of the document it names, in the
 * POST body or GET's `query` parameter, with the id taken out. Automatic persisted queries pass
 * as they came (`isAutomaticPersistedQuery`).
 */
export function trustedDocumentsStep(trusted: TrustedDocuments): RequestHandler {
  return (request, _response, next) => {
    if (request.method === 'POST' && Array.isArray(request.body)) {
      for (const operation of request.body as unknown[]) if (isRecord(operation)) nameDocument(trusted, operation);
    } else if (request.method === 'POST' && isRecord(request.body)) {
      nameDocument(trusted, request.body);
    } else if (request.method === 'GET') {
      const [path, search = ''] = request.url.split('?', 2) as [string, string?];
      const parameters = new URLSearchParams(search);
      const extensions = jsonParameter(parameters, 'extensions');
      const reference = { query: onlyParameter(parameters, 'query'), documentId: onlyParameter(parameters, 'documentId'), extensions };
      if (!trusted.isAutomaticPersistedQuery(reference)) {
        const text = trusted.documentFor(reference);
        if (text !== undefined) parameters.set('query', text);
        parameters.delete('documentId');
        if (isRecord(extensions) && 'persistedQuery' in extensions) {
          delete extensions.persistedQuery;
          parameters.set('extensions', JSON.stringify(extensions));
        }
        request.url = `${path}?${parameters}`;
      }
    }
    next();
  };
}

/** One operation of a POST body, named by its text for Apollo Server. */
function nameDocument(trusted: TrustedDocuments, body: Record<string, unknown>): void {
  if (trusted.isAutomaticPersistedQuery(body)) return;
  const text = trusted.documentFor(body);
  if (text !== undefined) body.query = text;
  delete body.documentId;
  if (isRecord(body.extensions)) delete body.extensions.persistedQuery;
}

/** A GET parameter given at most once, as Apollo Server reads `query`. */
function onlyParameter(parameters: URLSearchParams, name: string): string | undefined {
  const values = parameters.getAll(name);
  if (values.length > 1) throw badRequest(`the '${name}' search parameter may only be specified once`);
  return values[0];
}

/** A JSON parameter, or undefined when absent or not JSON (Apollo Server then answers for it). */
function jsonParameter(parameters: URLSearchParams, name: string): unknown {
  const value = parameters.get(name);
  if (value === null) return undefined;
  try {
    return JSON.parse(value) as unknown;
  } catch {
    return undefined;
  }
}
