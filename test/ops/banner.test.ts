import { describe, expect, it } from 'vitest';

import { type Banner, banner, embeddedDatabase } from '../../src/banner.js';
import { loadConfig } from '../../src/config.js';

const URL = 'http://127.0.0.1:4000';
const started: Banner = { url: URL, embeddedUri: undefined, dataDir: undefined, demoToken: undefined, subscriptions: { available: true } };

/** The start banner as `npm start` prints it for this environment (no server: the banner is text about one). */
const bannerFor = (environment: Record<string, string>) => banner(loadConfig(environment), started, 'mongodb://db.example.com/chat');

describe('the start banner', () => {
  it('says, with the default HOST, that every address of the machine listens, not only the URL it shows', () => {
    const text = bannerFor({});
    expect(text).toContain(
      `chat-gateway listening on ${URL} (deployment: community)\n  bound to          0.0.0.0: every address of this machine`,
    );
    expect(bannerFor({ HOST: '::' })).toMatch(/^ {2}bound to {10}::: every address of this machine/m);
  });

  it('shows no wildcard with a HOST of one address', () => {
    expect(bannerFor({ HOST: '127.0.0.1' })).not.toMatch(/bound to|every address/);
  });

  it('names the three subscription transports, or why there are none', () => {
    const lines = bannerFor({ HOST: '127.0.0.1' }).split('\n');
    const at = lines.findIndex((line) => line.startsWith('  subscriptions '));
    expect(lines.slice(at, at + 3)).toEqual([
      '  subscriptions     ws://127.0.0.1:4000/graphql (WebSocket, graphql-transport-ws)',
      '                    http://127.0.0.1:4000/graphql/stream (Server-Sent Events, graphql-sse)',
      '                    POST http://127.0.0.1:4000/graphql with Accept: multipart/mixed;subscriptionSpec="1.0" (multipart HTTP, as Apollo Client subscribes)',
    ]);
    const none = banner(
      loadConfig({}),
      { ...started, subscriptions: { available: false, reason: 'a standalone server has no change streams' } },
      'x',
    );
    expect(none).toMatch(/^ {2}subscriptions {5}NOT available: a standalone server has no change streams; everything else works$/m);
  });

  it('says where the embedded engine keeps its data, and that DATA_DIR=memory loses it at exit', () => {
    const engine = { ...started, embeddedUri: 'mongodb://%2Ftmp%2Fx%2Fmongodb.sock/' };
    const kept = banner(loadConfig({}), { ...engine, dataDir: '/srv/chat/.data' }, embeddedDatabase({ dataDir: '/srv/chat/.data' }));
    expect(kept).toMatch(/^ {2}database {10}embedded engine \(in this process\), data kept in \/srv\/chat\/\.data$/m);
    expect(kept).not.toMatch(/LOST/);
    expect(kept).toContain('Tokens are signed with the secret kept in /srv/chat/.data: npm run token -- --user ID signs one here.');
    const lost = banner(loadConfig({}), engine, embeddedDatabase({ dataDir: undefined }));
    expect(lost).toMatch(/^ {2}database {10}embedded engine \(in memory, in this process\)$/m);
    expect(lost).toMatch(/data is LOST when the process exits \(DATA_DIR=memory\)/);
  });
});
