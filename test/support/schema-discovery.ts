import {
  getNamedType,
  type GraphQLField,
  type GraphQLObjectType,
  type GraphQLSchema,
  isEnumType,
  isInputObjectType,
  isInterfaceType,
  isNonNullType,
  isObjectType,
  isScalarType,
} from 'graphql';

import { buildSchema } from '../../src/graphql/schema.js';

/**
 * A clairvoyance-style guess of a schema with introspection off: field, argument and type names
 * from a word list are tried in batches at the root of each operation type, under every object
 * type (reached through a path of real fields, as if already found), as arguments, and as type
 * conditions, the way clairvoyance probes; then every word on its own. The answers are read for
 * names of the schema the probe did not send (what clairvoyance parses out of validation
 * messages) and for words whose answer differs from a nonsense word's (an existence oracle).
 */
export interface Discovery {
  /** Names of the schema's types, fields and arguments that answers told, unasked. */
  named: Set<string>;
  /** Words of the list told apart from a nonsense word by their answer alone. */
  distinguished: Set<string>;
  requests: number;
}

/** Every name an attacker wants: the schema's own types, fields, arguments and enum values. */
export function schemaNames(schema: GraphQLSchema = buildSchema()) {
  const names = { types: new Set<string>(), fields: new Set<string>(), arguments: new Set<string>(), enumValues: new Set<string>() };
  for (const type of Object.values(schema.getTypeMap())) {
    if (type.name.startsWith('__') || (isScalarType(type) && BUILT_IN_SCALARS.includes(type.name))) continue;
    names.types.add(type.name);
    if (isObjectType(type) || isInterfaceType(type) || isInputObjectType(type)) {
      for (const field of Object.values(type.getFields())) {
        names.fields.add(field.name);
        for (const argument of 'args' in field ? field.args : []) names.arguments.add(argument.name);
      }
    }
    if (isEnumType(type)) for (const value of type.getValues()) names.enumValues.add(value.name);
  }
  return names;
}

/** Words clairvoyance's general list would try beside the right ones. */
const DECOYS = [
  'user',
  'users',
  'me',
  'viewer',
  'node',
  'account',
  'accounts',
  'email',
  'password',
  'admin',
  'token',
  'tokens',
  'session',
  'login',
  'logout',
  'register',
  'createUser',
  'updateUser',
  'deleteUser',
  'balance',
  'wallet',
  'payment',
  'payments',
  'order',
  'orders',
  'invoice',
  'chat',
  'chats',
  'thread',
  'threads',
  'post',
  'posts',
  'comment',
  'comments',
  'search',
  'settings',
  'profile',
  'permissions',
  'apiKey',
  'apiKeys',
  'secret',
  'User',
  'Account',
  'Payment',
  'Order',
  'Chat',
  'Thread',
  'Post',
  'Profile',
  'Session',
  'Token',
  'limit',
  'offset',
  'page',
  'filter',
  'sort',
  'input',
  'where',
];

const BUILT_IN_SCALARS = ['Int', 'Float', 'String', 'Boolean', 'ID'];
const NONSENSE = 'zqxjkvbw';
const BATCH = 20;
/** A literal of each argument type, so that paths through fields with required arguments validate. */
const LITERALS: Record<string, string> = { Int: '1', Float: '1', String: '"x"', Boolean: 'true', ID: '"1"' };

/** Runs the whole probe; `send` posts one GraphQL document and answers the body's text. */
export async function discoverSchema(send: (query: string) => Promise<string>): Promise<Discovery> {
  const schema = buildSchema();
  const names = schemaNames(schema);
  const everyName = new Set([...names.types, ...names.fields, ...names.arguments, ...names.enumValues]);
  const words = [...new Set([...everyName, ...DECOYS])];
  const discovery: Discovery = { named: new Set(), distinguished: new Set(), requests: 0 };

  const probe = async (query: string): Promise<string> => {
    const answer = await send(query);
    discovery.requests += 1;
    for (const name of toldNames(answer)) {
      if (everyName.has(name) && !new RegExp(`\\b${name}\\b`).test(query)) discovery.named.add(name);
    }
    return answer;
  };

  // Batches, as clairvoyance sends them: fields under every object type, arguments of every field, type conditions.
  const selections = pathsToObjectTypes(schema);
  for (let start = 0; start < words.length; start += BATCH) {
    const batch = words.slice(start, start + BATCH);
    for (const { operation, path, type } of selections) {
      await probe(`${operation} { ${path(batch.join(' '))} }`);
      await probe(`${operation} { ${path(`__typename ${batch.map((word) => `... on ${word} { __typename }`).join(' ')}`)} }`);
      for (const field of Object.values(type.getFields())) {
        const argumentsGuess = batch.map((word) => `${word}: 1`).join(', ');
        await probe(`${operation} { ${path(`${field.name}(${argumentsGuess})${selectionFor(field)}`)} }`);
      }
    }
  }

  // Each word alone, at the root and as a type condition: does its answer differ from a nonsense word's?
  const alone = [(word: string) => `query { ${word} }`, (word: string) => `query { ... on ${word} { __typename } }`];
  for (const shape of alone) {
    const baseline = withoutWord(await probe(shape(NONSENSE)), NONSENSE);
    for (const word of words) {
      if (withoutWord(await probe(shape(word)), word) !== baseline) discovery.distinguished.add(word);
    }
  }
  return discovery;
}

/** The answer with the guessed word blanked out of its error messages, which may quote it back. */
function withoutWord(answer: string, word: string): string {
  try {
    const body = JSON.parse(answer) as { errors?: { message: string }[] };
    for (const error of body.errors ?? []) error.message = error.message.replace(new RegExp(`\\b${word}\\b`, 'g'), '§');
    return JSON.stringify(body);
  } catch {
    return answer;
  }
}

/** Every identifier in the answer's error messages, extensions (but their code) and data values. */
function toldNames(answer: string): string[] {
  let body: { errors?: { message?: unknown; extensions?: Record<string, unknown> }[]; data?: unknown };
  try {
    body = JSON.parse(answer) as typeof body;
  } catch {
    return answer.match(/[_A-Za-z][_0-9A-Za-z]*/g) ?? [];
  }
  const texts = (body.errors ?? []).flatMap(({ message, extensions }) => {
    const { code: _code, ...rest } = extensions ?? {};
    return [String(message ?? ''), JSON.stringify(rest)];
  });
  texts.push(JSON.stringify(body.data ?? null).replace(/"[^"]*":/g, ''));
  return texts.join(' ').match(/[_A-Za-z][_0-9A-Za-z]*/g) ?? [];
}

interface Selection {
  operation: 'query' | 'mutation';
  /** Wraps a selection set's content in the path of real fields that leads to `type`. */
  path: (inner: string) => string;
  type: GraphQLObjectType;
}

/** A path of real fields from a root to each object type of the schema (the first one found). */
function pathsToObjectTypes(schema: GraphQLSchema): Selection[] {
  const found = new Map<string, Selection>();
  const roots = [
    ['query', schema.getQueryType()],
    ['mutation', schema.getMutationType()],
  ] as const;
  for (const [operation, root] of roots) {
    if (!root) continue;
    const queue: Selection[] = [{ operation, path: (inner) => inner, type: root }];
    if (!found.has(root.name)) found.set(root.name, queue[0]!);
    while (queue.length > 0) {
      const { path, type } = queue.shift()!;
      for (const field of Object.values(type.getFields())) {
        const named = getNamedType(field.type);
        if (!isObjectType(named) || found.has(named.name)) continue;
        const call = `${field.name}${argumentsFor(field)}`;
        const next: Selection = { operation, path: (inner) => path(`${call} { ${inner} }`), type: named };
        found.set(named.name, next);
        queue.push(next);
      }
    }
  }
  return [...found.values()];
}

function argumentsFor(field: GraphQLField<unknown, unknown>): string {
  const required = field.args.filter((argument) => isNonNullType(argument.type) && argument.defaultValue === undefined);
  if (required.length === 0) return '';
  return `(${required.map((argument) => `${argument.name}: ${LITERALS[getNamedType(argument.type).name] ?? '1'}`).join(', ')})`;
}

function selectionFor(field: GraphQLField<unknown, unknown>): string {
  return isObjectType(getNamedType(field.type)) ? ' { __typename }' : '';
}
