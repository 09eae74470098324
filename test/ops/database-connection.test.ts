import { describe, expect, it } from 'vitest';

import { DEFAULT_APP_NAME } from '../../src/db/database.js';
import { uriOption, withDatabaseName } from '../../src/db/uri.js';
import { faultTestsUnavailable, startFaultDatabase } from '../support/fail-points.js';
import { startTestGateway } from '../support/gateway.js';

describe('connection strings', () => {
  it('name a database whatever their hosts, credentials and options', () => {
    expect(withDatabaseName('mongodb://a.example:27017,b.example:27018/old?replicaSet=rs0&w=majority', 'chat')).toBe(
      'mongodb://a.example:27017,b.example:27018/chat?replicaSet=rs0&w=majority',
    );
    expect(withDatabaseName('mongodb://user:p%40ss@db.example', 'chat')).toBe('mongodb://user:p%40ss@db.example/chat');
    expect(withDatabaseName('mongodb+srv://cluster.example/?retryWrites=true', 'chat')).toBe(
      'mongodb+srv://cluster.example/chat?retryWrites=true',
    );
  });

  it('read an option by its name in any case, as the driver does', () => {
    expect(uriOption('mongodb://db.example/chat?APPNAME=billing&w=1', 'appName')).toBe('billing');
    expect(uriOption('mongodb://db.example/chat?w=1', 'appName')).toBeUndefined();
  });
});

const faultsUnavailable = await faultTestsUnavailable();

describe("the gateway's connections to the database", () => {
  it(`introduce themselves as ${DEFAULT_APP_NAME}, unless the connection string names another application`, async () => {
    const gateway = await startTestGateway();
    try {
      expect(gateway.database.connection.getClient().options.appName).toBe(DEFAULT_APP_NAME);
    } finally {
      await gateway.stop();
    }
  });

  it.skipIf(faultsUnavailable !== undefined)(
    "carry the connection string's appName to the server, where a fail point can single them out",
    async () => {
      const faults = await startFaultDatabase();
      const gateway = await startTestGateway({ MONGODB_URI: faults.gatewayUri }, { database: faults.database });
      try {
        expect(gateway.database.connection.getClient().options.appName).toBe(faults.appName);
        await faults.failCommand({ times: 1 }, { failCommands: ['ping'], errorCode: 10107 });
        expect((await fetch(`${gateway.url}/readyz`)).status).toBe(503);
        expect((await faults.off()).failCommand).toBe(1);
        // The test's own client is another application: untouched.
        await faults.failCommand('alwaysOn', { failCommands: ['ping'], errorCode: 10107 });
        expect(await faults.db.command({ ping: 1 })).toMatchObject({ ok: 1 });
      } finally {
        await faults.off();
        await gateway.stop();
        await faults.stop();
      }
    },
  );
});
