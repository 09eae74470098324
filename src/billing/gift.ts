/** The gift packages and the points each grants, once per user, ever. */
export const GIFT_POINTS = { cert: 50, teenager: 150 } as const;

export type Gift = keyof typeof GIFT_POINTS;

export const GIFTS = Object.keys(GIFT_POINTS) as Gift[];

/**
 * One flag per gift: the provider's certification flags (`/app/cert`), which are also what the
 * gift package answers, and what decides the gifts a user qualifies for.
 */
export type GiftPackage = Record<Gift, boolean>;
