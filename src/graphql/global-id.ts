import { GRAPHQL_MAX_INT } from 'graphql';

/**
 * What a global id names: a type that implements `Node` and the key of one object of it. A
 * conversation is keyed by its owner and its number, so two users' conversations of the same
 * number have different ids.
 */
export type NodeKey = { type: 'Conversation'; userId: number; number: number };

const CONVERSATION = /^Conversation:([1-9][0-9]{0,15}):([1-9][0-9]{0,9})$/;

/** The global id of an object: base64url of `<type>:<key>`, opaque to clients and the same every time. */
export function toGlobalId(key: NodeKey): string {
  return Buffer.from(`${key.type}:${key.userId}:${key.number}`).toString('base64url');
}

/**
 * What a global id names, or null when it is not one this API gave: malformed, another spelling
 * of one (base64url decoding skips stray characters, so the id must be exactly as issued), or
 * out of range.
 */
export function fromGlobalId(id: string): NodeKey | null {
  const match = CONVERSATION.exec(Buffer.from(id, 'base64url').toString());
  if (match === null) return null;
  const key: NodeKey = { type: 'Conversation', userId: Number(match[1]), number: Number(match[2]) };
  const inRange = Number.isSafeInteger(key.userId) && key.number <= GRAPHQL_MAX_INT;
  return inRange && toGlobalId(key) === id ? key : null;
}
