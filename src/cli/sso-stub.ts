import { loadSsoStubConfig } from '../config.js';
import { InvalidInput } from '../invalid-input.js';
import { readStubFile, StubFileError } from '../sso-stub/stub-file.js';
import { startSsoStub } from '../sso-stub/stub-server.js';
import { parsePort, runCommand, stopOnSignals } from './command.js';

const USAGE = `Usage: npm run sso-stub -- --port N [--file FILE.json] [--host H] [--secret S]

A local stand-in for the external SSO provider, for trying DEPLOYMENT=official on one machine.
  --port N       port to listen on (0 picks a free one)
  --file FILE    users and wallets, e.g. examples/sso-stub.json (without it every user has wallet 0)
  --host H       bind address, default 127.0.0.1
  --secret S     the shared secret; defaults to SSO_SECRET (environment or .env);
                 with neither, any bearer secret is accepted
Then start the gateway with DEPLOYMENT=official SSO_URL=<the printed URL> SSO_SECRET=<the same secret>.`;

await runCommand({
  name: 'sso-stub',
  usage: USAGE,
  options: {
    port: { type: 'string' },
    file: { type: 'string' },
    host: { type: 'string', default: '127.0.0.1' },
    secret: { type: 'string' },
  },
  async run({ values }) {
    if (values.port === undefined) throw new InvalidInput(['--port is required (see --help)']);
    const port = parsePort(values.port);
    const secret = values.secret ?? loadSsoStubConfig().ssoSecret;
    let users = {};
    try {
      if (values.file !== undefined) users = await readStubFile(values.file);
    } catch (error) {
      if (error instanceof StubFileError) throw new InvalidInput(error.message.split('\n'));
      throw error;
    }
    const stub = await startSsoStub({ secret, users, host: values.host, port });
    // Before it says it listens: whoever reads that may signal it at once.
    stopOnSignals('sso-stub', () => stub.close());
    console.log(`SSO stub listening on ${stub.url} (${Object.keys(users).length} users)`);
    if (secret === undefined) console.log('No --secret or SSO_SECRET: any bearer secret is accepted.');
  },
});
