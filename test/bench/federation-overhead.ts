import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';

import { composeServices } from '@theguild/federation-composition';
import autocannon, { type Result } from 'autocannon';
import { parse } from 'graphql';

import { secretKey, signAccessToken } from '../../src/auth/access-token.js';
import { CONNECTIONS, median } from './load.js';
import { type Child, freePort, startGatewayInMemory, startNode, waitForHttp, waitForOutput } from './processes.js';

/**
 * The CPU a router adds per request: one screen query sent to the gateway as a federation
 * subgraph directly, and the same query through Hive Gateway (test/federation/hive-gateway.ts)
 * over a supergraph of that subgraph, in interleaved rounds (the order swapped each round), each
 * round the same number of requests. CPU is each process's user + system time from /proc, over
 * the requests of a round; the load generator runs in this process and is not counted.
 *
 * npm run build && node --import tsx test/bench/federation-overhead.ts [--requests 3000] [--rounds 3]
 */
const { values } = parseArgs({
  options: {
    requests: { type: 'string', default: '3000' },
    rounds: { type: 'string', default: '3' },
    // The router's default: identical subgraph requests in flight at once are sent once.
    deduplicate: { type: 'boolean', default: false },
  },
});
const REQUESTS = Number(values.requests);
const ROUNDS = Number(values.rounds);

const METRICS_TOKEN = randomBytes(16).toString('hex');
const SCREEN = 'query Screen { quota conversations(first: 10) { edges { node { id number name } } } }';

const scratch = await mkdtemp(join(tmpdir(), 'federation-overhead-'));
const children: Child[] = [];
try {
  const seedFile = join(scratch, 'seed.json');
  await writeFile(
    seedFile,
    JSON.stringify({
      users: [{ id: 1, username: 'bench', quota: 10 }],
      conversations: Array.from({ length: 20 }, (_, index) => ({
        userId: 1,
        id: index + 1,
        name: `Conversation ${index + 1}`,
        model: 'gpt-4o',
        enableWeb: false,
        messages: [{ role: 'user', content: 'hello' }],
      })),
    }),
  );
  const jwtSecret = randomBytes(32).toString('base64url');
  const port = await freePort();
  const subgraph = startGatewayInMemory(
    'subgraph',
    { port, jwtSecret },
    { SEED_FILE: seedFile, FEDERATION_SUBGRAPH: 'true', METRICS_TOKEN: METRICS_TOKEN },
  );
  children.push(subgraph);
  const direct = `http://127.0.0.1:${port}`;
  await waitForHttp(subgraph, `${direct}/readyz`);
  const authorization = `Bearer ${await signAccessToken(secretKey(jwtSecret), 1)}`;

  const sdl = ((await post(direct, '{ _service { sdl } }', authorization)) as { data: { _service: { sdl: string } } }).data._service.sdl;
  const composed = composeServices([{ name: 'chat', typeDefs: parse(sdl), url: `${direct}/graphql` }]);
  if (composed.errors) throw new Error(composed.errors.map((error) => error.message).join('\n'));
  const supergraphFile = join(scratch, 'supergraph.graphql');
  await writeFile(supergraphFile, composed.supergraphSdl);
  const routerArgs = [
    'test/federation/hive-gateway.ts',
    '--supergraph',
    supergraphFile,
    ...(values.deduplicate ? [] : ['--no-deduplication']),
  ];
  const router = startNode('router', routerArgs, {
    env: { NODE_ENV: 'production' },
    nodeOptions: ['--import', 'tsx'],
  });
  children.push(router);
  const [, routed] = (await waitForOutput(router, /listening on (http:\/\/127\.0\.0\.1:\d+)/)) as unknown as [string, string];

  // The same answer both ways, or the comparison means nothing.
  const answers = await Promise.all([post(direct, SCREEN, authorization), post(routed, SCREEN, authorization)]);
  if (JSON.stringify(answers[0]) !== JSON.stringify(answers[1])) throw new Error(`different answers: ${JSON.stringify(answers)}`);

  const targets = { direct: direct, router: routed } as const;
  for (const url of Object.values(targets)) await send(url, authorization, 1_000);

  const rounds: { direct: number; router_subgraph: number; router_router: number; subgraph_requests_through_router: number }[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? (['direct', 'router'] as const) : (['router', 'direct'] as const);
    const result = { direct: 0, router_subgraph: 0, router_router: 0, subgraph_requests_through_router: 0 };
    for (const target of order) {
      const before = { subgraph: subgraph.cpuSeconds(), router: router.cpuSeconds(), executions: await executions(direct) };
      await send(targets[target], authorization, REQUESTS);
      const perRequest = (child: Child, start: number) => ((child.cpuSeconds() - start) * 1e6) / REQUESTS;
      if (target === 'direct') result.direct = perRequest(subgraph, before.subgraph);
      else {
        result.router_subgraph = perRequest(subgraph, before.subgraph);
        result.router_router = perRequest(router, before.router);
        result.subgraph_requests_through_router = (await executions(direct)) - before.executions;
      }
    }
    rounds.push(result);
    console.log(`round ${round + 1}: ${JSON.stringify(result)}`);
  }
  const summary = (pick: (round: (typeof rounds)[number]) => number) => {
    const all = rounds.map(pick);
    return { median_us: Math.round(median(all)), min_us: Math.round(Math.min(...all)), max_us: Math.round(Math.max(...all)) };
  };
  console.log(
    JSON.stringify(
      {
        requests_per_round: REQUESTS,
        router_deduplicates_inflight_requests: values.deduplicate,
        connections: CONNECTIONS,
        rounds: ROUNDS,
        direct_subgraph_cpu_per_request: summary((round) => round.direct),
        through_router_subgraph_cpu_per_request: summary((round) => round.router_subgraph),
        through_router_router_cpu_per_request: summary((round) => round.router_router),
        through_router_total_cpu_per_request: summary((round) => round.router_subgraph + round.router_router),
      },
      null,
      2,
    ),
  );
} finally {
  await Promise.all(children.map((child) => child.stop()));
  await rm(scratch, { recursive: true, force: true });
}

/** Operations the subgraph has executed so far, from its /metrics. */
async function executions(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text();
  return [...text.matchAll(/^graphql_executions_total\{[^}]*\} (\d+)$/gm)].reduce((sum, [, count]) => sum + Number(count), 0);
}

async function post(base: string, query: string, authorization: string): Promise<unknown> {
  const response = await fetch(`${base}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization },
    body: JSON.stringify({ query }),
  });
  return response.json();
}

/** `amount` screen queries at `CONNECTIONS` keep-alive connections; any error or non-2xx answer fails the run. */
async function send(base: string, authorization: string, amount: number): Promise<void> {
  const result = await new Promise<Result>((resolve, reject) =>
    autocannon(
      {
        url: `${base}/graphql`,
        connections: CONNECTIONS,
        amount,
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization },
        body: JSON.stringify({ query: SCREEN }),
        timeout: 10,
      },
      (error, finished) => (error ? reject(error) : resolve(finished)),
    ),
  );
  if (result.errors > 0 || result.non2xx > 0) throw new Error(`${base}: ${result.errors} errors, ${result.non2xx} non-2xx answers`);
}
