import { parseArgs } from 'node:util';
import { startSsoStub } from '../sso-stub/stub-server.js';
import { readStubFile } from '../sso-stub/stub-file.js';

const USAGE = `Usage: npm run sso-stub -- --port N [--file FILE.json] [--host H] [--secret S]

A local stand-in for the external SSO provider, for trying DEPLOYMENT=official on one machine.
  --port N       port to listen on (0 picks a free one)
  --file FILE    users and wallets, e.g. examples/sso-stub.json (without it every user has wallet 0)
  --host H       bind address, default 127.0.0.1
  --secret S     the shared secret; defaults to the SSO_SECRET environment variable;
                 with neither, any bearer secret is accepted
Then start the gateway with DEPLOYMENT=official SSO_URL=<the printed URL> SSO_SECRET=<the same secret>.`;

class UsageError extends Error {}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      port: { type: 'string' },
      file: { type: 'string' },
      host: { type: 'string', default: '127.0.0.1' },
      secret: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  if (values.port === undefined) throw new UsageError('--port is required');
  const port = Number(values.port);
  if (!/^\d+$/.test(values.port) || port > 65535) throw new UsageError(`--port must be an integer from 0 to 65535, not ${values.port}`);
  // This program is separate from the gateway, so it reads its one variable itself.
  const secret = values.secret ?? (process.env.SSO_SECRET || undefined);

  const users = values.file === undefined ? {} : await readStubFile(values.file);
  const stub = await startSsoStub({ secret, users, host: values.host, port });
  console.log(`SSO stub listening on ${stub.url} (${Object.keys(users).length} users)`);
  if (secret === undefined) console.log('No --secret or SSO_SECRET: any bearer secret is accepted.');

  const stop = (): void => {
    stub.close().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((error: unknown) => {
  if (error instanceof UsageError || (error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS'))) {
    console.error(`sso-stub: ${error.message}\n\n${USAGE}`);
    process.exit(2);
  }
  console.error(`sso-stub: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
