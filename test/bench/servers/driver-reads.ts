import type { ServerResponse } from 'node:http';

import { MongoClient } from 'mongodb';

import { conversationIdOf, type ConversationRow, INVALID_ID, listBody, loadBody } from './legacy-bodies.js';

/**
 * The two legacy reads straight on the `mongodb` driver, and the answer written straight on the
 * socket: what the floor and the Express floor share, so that they differ only in what is
 * between HTTP and these reads.
 */
export interface DriverReads {
  /** The list body of the user's 100 newest conversations. */
  list(userId: number): Promise<unknown>;
  /** The load body of one conversation, from the `id` query parameter as given. */
  load(userId: number, idParameter: string | null): Promise<unknown>;
  close(): Promise<void>;
}

const SUMMARY = { _id: 0, id: 1, userId: 1, name: 1, model: 1, enableWeb: 1 } as const;

export async function driverReads(uri: string): Promise<DriverReads> {
  const client = await MongoClient.connect(uri);
  const conversations = client.db().collection<ConversationRow>('conversations');
  return {
    async list(userId) {
      return listBody(await conversations.find({ userId }, { projection: SUMMARY, sort: { id: -1 }, limit: 100 }).toArray());
    },
    async load(userId, idParameter) {
      const id = conversationIdOf(idParameter);
      if (id === null) return INVALID_ID;
      return loadBody(await conversations.findOne({ userId, id }, { projection: { ...SUMMARY, messages: 1 } }));
    },
    close: () => client.close(),
  };
}

export function sendJson(response: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  response.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) }).end(text);
}
