import { parseArgs } from 'node:util';

import express from 'express';
import mongoose from 'mongoose';

import { conversationModel } from '../../../src/conversations/conversation.model.js';
import { bearerUser, conversationIdOf, INVALID_ID, listBody, loadBody } from './legacy-bodies.js';

/**
 * The hand-written baseline: what one would write for the two legacy reads
 * without a GraphQL layer — Express, a JWT check, one lean Mongoose query, and
 * the legacy body.
 *
 * node --import tsx test/bench/servers/baseline.ts --port N --uri MONGODB_URI --secret JWT_SECRET
 */
const { values } = parseArgs({ options: { port: { type: 'string' }, uri: { type: 'string' }, secret: { type: 'string' } } });
if (!values.port || !values.uri || !values.secret) throw new Error('usage: baseline.ts --port N --uri MONGODB_URI --secret JWT_SECRET');

const callerOf = bearerUser(values.secret);
const connection = await mongoose.createConnection(values.uri).asPromise();
const conversations = conversationModel(connection);

const app = express();
app.disable('x-powered-by');

app.get('/conversation/list', async (request, response) => {
  const userId = await callerOf(request.get('authorization'));
  if (userId === null) return void response.status(401).json({ status: false, message: 'unauthorized' });
  const rows = await conversations
    .find({ userId }, { _id: 0, id: 1, userId: 1, name: 1, model: 1, enableWeb: 1 })
    .sort({ id: -1 })
    .limit(100)
    .lean();
  response.type('application/json').send(JSON.stringify(listBody(rows)));
});

app.get('/conversation/load', async (request, response) => {
  const userId = await callerOf(request.get('authorization'));
  if (userId === null) return void response.status(401).json({ status: false, message: 'unauthorized' });
  const id = conversationIdOf(request.query.id);
  if (id === null) return void response.type('application/json').send(JSON.stringify(INVALID_ID));
  const row = await conversations
    .findOne({ userId, id }, { _id: 0, id: 1, userId: 1, name: 1, messages: 1, model: 1, enableWeb: 1 })
    .lean();
  response.type('application/json').send(JSON.stringify(loadBody(row)));
});

const server = app.listen(Number(values.port), '127.0.0.1', () => {
  process.stdout.write(`baseline listening on port ${values.port}\n`);
});
process.once('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  void connection.close().then(() => process.exit(0));
});
