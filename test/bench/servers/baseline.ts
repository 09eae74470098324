import express from 'express';
import { jwtVerify } from 'jose';
import mongoose from 'mongoose';
import { parseArgs } from 'node:util';
import { conversationModel } from '../../../src/conversations/conversation.model.js';

/**
 * The hand-written baseline: what one would write for the two legacy reads
 * without a GraphQL layer — Express, a JWT check, one lean Mongoose query, and
 * the legacy body. The benchmark checks that its bodies are byte-identical to
 * the gateway's before it measures anything.
 *
 * node --import tsx test/bench/servers/baseline.ts --port N --uri MONGODB_URI --secret JWT_SECRET
 */
const { values } = parseArgs({ options: { port: { type: 'string' }, uri: { type: 'string' }, secret: { type: 'string' } } });
if (!values.port || !values.uri || !values.secret) throw new Error('usage: baseline.ts --port N --uri MONGODB_URI --secret JWT_SECRET');

const key = new TextEncoder().encode(values.secret);
const connection = await mongoose.createConnection(values.uri).asPromise();
const conversations = conversationModel(connection);

async function callerOf(authorization: string | undefined): Promise<number | null> {
  if (authorization === undefined) return null;
  const token = authorization.replace(/^bearer\s+/i, '');
  try {
    const { payload } = await jwtVerify(token, key, { algorithms: ['HS256'] });
    return /^[1-9][0-9]{0,15}$/.test(payload.sub ?? '') ? Number(payload.sub) : null;
  } catch {
    return null;
  }
}

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
  const data = rows.map((row) => ({ id: row.id, user_id: row.userId, name: row.name, message: null, model: row.model, enable_web: row.enableWeb }));
  response.type('application/json').send(JSON.stringify({ status: true, message: '', data }));
});

app.get('/conversation/load', async (request, response) => {
  const userId = await callerOf(request.get('authorization'));
  if (userId === null) return void response.status(401).json({ status: false, message: 'unauthorized' });
  const id = typeof request.query.id === 'string' && /^(0|[1-9][0-9]{0,9})$/.test(request.query.id) ? Number(request.query.id) : null;
  if (id === null) return void response.type('application/json').send(JSON.stringify({ status: false, message: 'invalid id' }));
  const row = await conversations.findOne({ userId, id }, { _id: 0, id: 1, userId: 1, name: 1, messages: 1, model: 1, enableWeb: 1 }).lean();
  const body =
    row === null
      ? { status: false, message: 'conversation not found' }
      : {
          status: true,
          message: 'success',
          data: {
            id: row.id,
            user_id: row.userId,
            name: row.name,
            message: (row.messages ?? []).map(({ role, content }) => ({ role, content })),
            model: row.model,
            enable_web: row.enableWeb,
          },
        };
  response.type('application/json').send(JSON.stringify(body));
});

const server = app.listen(Number(values.port), '127.0.0.1', () => {
  process.stdout.write(`baseline listening on port ${values.port}\n`);
});
process.once('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  void connection.close().then(() => process.exit(0));
});
