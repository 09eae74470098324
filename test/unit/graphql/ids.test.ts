import { describe, expect, it } from 'vitest';

import { decodeCursor, encodeCursor } from '../../../src/conversations/cursor.js';
import { fromGlobalId, toGlobalId } from '../../../src/graphql/global-id.js';

const base64url = (text: string) => Buffer.from(text).toString('base64url');

describe('global ids', () => {
  it('are base64url of `Conversation:<owner>:<number>`', () => {
    expect(toGlobalId({ type: 'Conversation', userId: 7, number: 3 })).toBe(base64url('Conversation:7:3'));
  });

  it.each([
    [1, 1],
    [7, 3],
    [Number.MAX_SAFE_INTEGER, 2_147_483_647],
  ])('read back what they name (owner %d, number %d)', (userId, number) => {
    const key = { type: 'Conversation' as const, userId, number };
    expect(fromGlobalId(toGlobalId(key))).toEqual(key);
  });

  it('tell two owners’ conversations of the same number apart', () => {
    expect(toGlobalId({ type: 'Conversation', userId: 1, number: 1 })).not.toBe(toGlobalId({ type: 'Conversation', userId: 2, number: 1 }));
  });

  it.each([
    ['another type', base64url('User:1:1')],
    ['a number out of Int', base64url('Conversation:1:2147483648')],
    ['an owner past safe integers', base64url('Conversation:9007199254740993:1')],
    ['a zero', base64url('Conversation:0:1')],
    ['a leading zero', base64url('Conversation:1:01')],
    ['a missing part', base64url('Conversation:1')],
    ['trailing text', base64url('Conversation:1:1:x')],
    ['not base64url at all', '%%%'],
    ['the empty string', ''],
    ['another spelling of a valid id (padding)', `${base64url('Conversation:1:1')}=`],
    ['another spelling of a valid id (a stray character)', `${base64url('Conversation:1:1')}.`],
  ])('name nothing when given %s', (_, id) => {
    expect(fromGlobalId(id)).toBeNull();
  });
});

describe('cursors', () => {
  it.each([1, 42, 2 ** 40])('read back the conversation they were made for (%d)', (id) => {
    expect(decodeCursor(encodeCursor(id))).toBe(id);
  });

  it('are opaque: base64url of `conversation:<id>`', () => {
    expect(encodeCursor(5)).toBe(base64url('conversation:5'));
  });

  it.each([
    ['another prefix', base64url('message:5')],
    ['a zero', base64url('conversation:0')],
    ['a negative number', base64url('conversation:-5')],
    ['a fraction', base64url('conversation:1.5')],
    ['no number', base64url('conversation:')],
    ['a number past 16 digits', base64url(`conversation:${'9'.repeat(17)}`)],
    ['garbage', 'not a cursor'],
  ])('are refused when they hold %s', (_, cursor) => {
    expect(decodeCursor(cursor)).toBeNull();
  });
});
