import { describe, expect, it } from 'vitest';

import { buildSchema } from '../../src/graphql/schema.js';
import { GRAPHQL_PATH, SSE_PATH } from '../../src/http/route-paths.js';
import { PURCHASE_RANGE } from '../../src/limits.js';
import { userErrors } from '../../src/shared/user-error.js';

/** Rules the schema's documentation states for clients, which live in code once (src/limits.ts). */
describe('the schema’s documentation', () => {
  it('states the purchase range that buy enforces and its refusal names', () => {
    const quota = buildSchema()
      .getMutationType()!
      .getFields()
      .buy!.args.find((argument) => argument.name === 'quota')!;
    const range = `from ${PURCHASE_RANGE.min} to ${PURCHASE_RANGE.max}`;
    expect(quota.description).toContain(range);
    expect(userErrors.invalidQuota.message).toBe(`invalid quota range (${PURCHASE_RANGE.min} ~ ${PURCHASE_RANGE.max})`);
  });

  it('names every transport that serves subscriptions, where each is served', () => {
    // As a reader takes it: lines joined.
    const description = buildSchema().getSubscriptionType()!.description!.replace(/\s+/g, ' ');
    expect(description).toContain(`\`graphql-transport-ws\` protocol on \`${GRAPHQL_PATH}\``);
    expect(description).toContain(`\`graphql-sse\` protocol on \`${SSE_PATH}\``);
    expect(description).toContain(`\`POST ${GRAPHQL_PATH}\` with \`Accept: multipart/mixed;subscriptionSpec="1.0"\``);
    expect(description).not.toMatch(/only/i);
  });
});
