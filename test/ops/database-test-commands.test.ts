import { MongoClient } from 'mongodb';
import { describe, expect, it } from 'vitest';

import { loadConfig } from '../../src/config.js';
import { createLogger } from '../../src/logger.js';
import { startService } from '../../src/service.js';
import { startEmbeddedDbProcess } from '../support/embedded-db-process.js';

/** Fault tests inject database failures with MongoDB's test commands; they exist only when asked for. */
async function configureFailPoint(uri: string): Promise<unknown> {
  const client = await MongoClient.connect(uri);
  try {
    return await client
      .db('admin')
      .command({ configureFailPoint: 'failCommand', mode: 'off' })
      .catch((error: { code?: number }) => error);
  } finally {
    await client.close();
  }
}

describe('MongoDB test commands on the embedded engine', () => {
  it('exist in the in-process engine only when the service is started for fault tests', async () => {
    const config = loadConfig({ DATA_DIR: 'memory', PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'silent', RATE_LIMIT: '0' });
    for (const enableTestCommands of [false, true]) {
      const service = await startService(config, createLogger(config), { enableTestCommands });
      try {
        const answer = await configureFailPoint(service.embeddedUri!);
        expect(answer).toMatchObject(enableTestCommands ? { ok: 1 } : { code: 59 });
      } finally {
        await service.stop();
      }
    }
  });

  it('exist in `npm run embedded-db` only with --enable-test-commands', async () => {
    for (const enableTestCommands of [false, true]) {
      const engine = await startEmbeddedDbProcess({ enableTestCommands });
      try {
        expect(await configureFailPoint(engine.uri)).toMatchObject(enableTestCommands ? { ok: 1 } : { code: 59 });
      } finally {
        await engine.stop();
      }
    }
  });
});
