import type { SeedData } from './seed-file.js';

export const DEMO_USER_ID = 1;

/** A small data set loaded by `npm start` on the embedded engine, so the API has something to show. */
export const demoData: SeedData = {
  users: [{ id: DEMO_USER_ID, username: 'demo', quota: 100 }],
  conversations: [
    {
      userId: DEMO_USER_ID,
      id: 1,
      name: 'Trip plan',
      model: 'gpt-4o',
      enableWeb: false,
      messages: [
        { role: 'system', content: 'You are a helpful travel assistant.' },
        { role: 'user', content: 'Plan three days in Lisbon.' },
        { role: 'assistant', content: 'Day 1: Alfama and the castle. Day 2: Belém. Day 3: Sintra.' },
      ],
    },
    {
      userId: DEMO_USER_ID,
      id: 2,
      name: 'Regex help',
      model: 'gpt-4o-mini',
      enableWeb: false,
      messages: [
        { role: 'user', content: 'Match a positive integer without leading zeros.' },
        { role: 'assistant', content: '^[1-9][0-9]*$' },
      ],
    },
    {
      userId: DEMO_USER_ID,
      id: 3,
      name: 'News digest',
      model: 'gpt-4o',
      enableWeb: true,
      messages: [{ role: 'user', content: 'Summarise today’s technology news.' }],
    },
  ],
};
