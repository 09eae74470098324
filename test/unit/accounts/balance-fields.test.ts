import mongoose from 'mongoose';
import { describe, expect, it } from 'vitest';

import { BALANCE_FIELD_NAMES, BALANCE_PARTS, storedBalanceOf, totalMicros, USERS_COLLECTION } from '../../../src/accounts/index.js';
import { balanceMicrosOf, userModel } from '../../../src/accounts/user.model.js';
import { conversationModel } from '../../../src/conversations/conversation.model.js';
import { CONVERSATIONS_COLLECTION } from '../../../src/conversations/index.js';
import { BALANCE_CHANGES, routeBalanceChange } from '../../../src/subscriptions/balance-updates.js';

// A connection that never connects: the models only describe the stored documents here.
const connection = mongoose.createConnection();
const users = userModel(connection);
const balanceFields = BALANCE_PARTS.map((part) => BALANCE_FIELD_NAMES[part]);

/** The field names a pipeline stage's keys name under `prefix`. */
const namedUnder = (stage: Record<string, unknown>, prefix: string) =>
  Object.keys(stage)
    .filter((key) => key.startsWith(prefix))
    .map((key) => key.slice(prefix.length));

describe('the stored balance, as accounts names it and the change feed reads it', () => {
  it('names fields of the user schema, numbers both, in the collections the domains store in', () => {
    for (const field of balanceFields) expect(users.schema.path(field)?.instance, field).toBe('Number');
    expect(users.collection.collectionName).toBe(USERS_COLLECTION);
    expect(conversationModel(connection).collection.collectionName).toBe(CONVERSATIONS_COLLECTION);
  });

  it('has the feed match and project exactly the fields accounts names', () => {
    const [{ $match }, { $project }] = BALANCE_CHANGES as [{ $match: { $or: Record<string, unknown>[] } }, { $project: Record<string, 1> }];
    const matched = $match.$or.flatMap((clause) => namedUnder(clause, 'updateDescription.updatedFields.'));
    const removed = $match.$or.flatMap(
      (clause) => (clause['updateDescription.removedFields'] as { $in?: string[] } | undefined)?.$in ?? [],
    );
    expect(matched.sort()).toEqual([...balanceFields].sort());
    expect(removed.sort()).toEqual([...balanceFields].sort());
    expect(namedUnder($project, 'updateDescription.updatedFields.').sort()).toEqual([...balanceFields].sort());
    expect(
      namedUnder($project, 'fullDocument.')
        .filter((field) => field !== 'id')
        .sort(),
    ).toEqual([...balanceFields].sort());
  });

  it('reads a document the user model writes as accounts reads it', () => {
    const user = new users({ id: 7, username: 'ann', balanceMicros: 1_500_000, balanceUnits: 25 }).toObject();
    const routed = routeBalanceChange({ operationType: 'insert', clusterTime: 1, fullDocument: user });
    expect(routed?.owner).toBe(7);
    expect(routed?.change.written).toEqual(storedBalanceOf(user));
    expect(routed?.change.written).toEqual({ micros: 1_500_000, legacyMicros: 2_500 });
    expect(totalMicros(storedBalanceOf(user))).toBe(balanceMicrosOf(user));
  });

  it('reads what an update wrote of each field, a removed field counting 0', () => {
    const update = (updateDescription: object) =>
      routeBalanceChange({ operationType: 'update', clusterTime: 1, fullDocument: { id: 3 }, updateDescription })?.change.written;
    expect(update({ updatedFields: { [BALANCE_FIELD_NAMES.legacyMicros]: 10 } })).toEqual({ legacyMicros: 1_000 });
    expect(update({ updatedFields: { [BALANCE_FIELD_NAMES.micros]: 42 } })).toEqual({ micros: 42 });
    expect(update({ removedFields: [BALANCE_FIELD_NAMES.micros] })).toEqual({ micros: 0 });
  });
});
