import { GraphQLError } from 'graphql';

export function badUserInput(message: string): GraphQLError {
  return new GraphQLError(message, { extensions: { code: 'BAD_USER_INPUT' } });
}

/** How an unreachable database is reported, inside an operation or before one runs. */
export const DATABASE_UNAVAILABLE = { code: 'DATABASE_UNAVAILABLE', message: 'database unavailable, try again later' } as const;
