import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';

import { describe, expect, it } from 'vitest';

import { EXAMPLE_JWT_SECRET, loadConfig, loadSidecarConfig, VARIABLE_NAMES } from '../../src/config.js';

/** `.env.example` as `NAME=value` entries, each with the comment lines just above it. */
function exampleEntries(): { name: string; value: string; comment: string }[] {
  const entries: { name: string; value: string; comment: string }[] = [];
  let comment: string[] = [];
  for (const line of readFileSync('.env.example', 'utf8').split('\n')) {
    if (line.startsWith('#')) comment.push(line);
    else if (line.trim() === '') comment = [];
    else {
      const [, name, value] = /^([A-Z_]+)=(.*)$/.exec(line)!;
      entries.push({ name: name!, value: value!, comment: comment.join('\n') });
    }
  }
  return entries;
}

describe('.env.example', () => {
  it('lists every variable the service reads, once, each with a line saying what it means', () => {
    const entries = exampleEntries();
    expect(entries.map(({ name }) => name).sort()).toEqual([...VARIABLE_NAMES].sort());
    // SSO_URL and SSO_SECRET share one comment, as SSO_TIMEOUT_MS and SSO_ATTEMPTS do.
    for (const { name, comment } of entries) if (!['SSO_SECRET', 'SSO_ATTEMPTS'].includes(name)) expect(comment, name).toMatch(/^# \S/);
  });

  it('gives each variable its default (an empty value is unset), so a copy changes nothing but JWT_SECRET', () => {
    const defaults = loadConfig({});
    for (const { name, value } of exampleEntries()) {
      if (name === 'JWT_SECRET') expect(value).toBe(EXAMPLE_JWT_SECRET);
      else expect(loadConfig({ [name]: value }), name).toEqual(defaults);
    }
  });

  it('has a JWT_SECRET good for the embedded engine only, refused with MONGODB_URI or in production', () => {
    expect(loadConfig({ JWT_SECRET: EXAMPLE_JWT_SECRET }).jwtSecret).toBe(EXAMPLE_JWT_SECRET);
    for (const more of [{ MONGODB_URI: 'mongodb://db.example.com/chat' }, { NODE_ENV: 'production' }]) {
      expect(() => loadConfig({ JWT_SECRET: EXAMPLE_JWT_SECRET, ...more })).toThrow(/JWT_SECRET is the example value from \.env\.example/);
    }
  });
});

describe('SHUTDOWN_DELAY_MS', () => {
  it('is 5000 in production and 0 elsewhere unless given, for the gateway and the sidecar alike', () => {
    expect(loadConfig({}).shutdownDelayMs).toBe(0);
    expect(loadConfig({ NODE_ENV: 'production' }).shutdownDelayMs).toBe(5_000);
    expect(loadConfig({ NODE_ENV: 'production', SHUTDOWN_DELAY_MS: '250' }).shutdownDelayMs).toBe(250);
    expect(loadSidecarConfig({}, { NODE_ENV: 'production' }).shutdownDelayMs).toBe(5_000);
    expect(() => loadConfig({ SHUTDOWN_DELAY_MS: 'soon' })).toThrow('SHUTDOWN_DELAY_MS must be a whole number from 0 to 600000');
  });
});

describe('RESPONSE_MAX_BYTES', () => {
  it('is 32 MiB unless given, from 64 KiB to 1 GiB', () => {
    expect(loadConfig({}).responseMaxBytes).toBe(32 * 1024 * 1024);
    expect(loadConfig({ RESPONSE_MAX_BYTES: '65536' }).responseMaxBytes).toBe(65_536);
    expect(() => loadConfig({ RESPONSE_MAX_BYTES: '32' })).toThrow('RESPONSE_MAX_BYTES must be a whole number from 65536 to 1073741824');
  });
});

describe('the sidecar’s HOST and PORT', () => {
  it('have the gateway’s defaults, and its flags win over the variables', () => {
    const gateway = loadConfig({});
    expect(loadSidecarConfig({}, {})).toMatchObject({ host: gateway.host, port: gateway.port });
    expect(loadSidecarConfig({ port: '8080', host: '127.0.0.1' }, { PORT: '9000', HOST: '10.0.0.1' })).toMatchObject({
      host: '127.0.0.1',
      port: 8080,
    });
  });
});

describe('the OTEL_* variables', () => {
  /** What an endpoint alone turns on: W3C trace context without callers' tracestate or baggage, every request sampled. */
  const DEFAULT_TRACING = { propagators: ['tracecontext'], sampler: { name: 'parentbased_always_on', ratio: 1 } };

  it('turn traces on with an OTLP endpoint, for all signals or for traces alone, unless the SDK is disabled', () => {
    expect(loadConfig({}).tracing).toBeUndefined();
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).tracing).toEqual({
      protocol: 'http/protobuf',
      ...DEFAULT_TRACING,
    });
    expect(
      loadConfig({
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://collector.example.com/v1/traces',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      }).tracing,
    ).toEqual({ protocol: 'http/json', ...DEFAULT_TRACING });
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' }).tracing).toBeUndefined();
    expect(loadSidecarConfig({}, { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).tracing).toEqual({
      protocol: 'http/protobuf',
      ...DEFAULT_TRACING,
    });
  });

  it('read the propagators and the sampler, for the gateway and the sidecar alike', () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
    const chosen = {
      OTEL_PROPAGATORS: 'baggage, tracecontext',
      OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
    };
    const expected = {
      protocol: 'http/protobuf',
      propagators: ['baggage', 'tracecontext'],
      sampler: { name: 'parentbased_traceidratio', ratio: 0.25 },
    };
    expect(loadConfig({ ...endpoint, ...chosen }).tracing).toEqual(expected);
    expect(loadSidecarConfig({}, { ...endpoint, ...chosen }).tracing).toEqual(expected);
    expect(loadConfig({ ...endpoint, OTEL_PROPAGATORS: 'none' }).tracing?.propagators).toEqual([]);
  });

  it('refuse propagators and samplers this build does not offer, one clear line each', () => {
    const endpoint = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' };
    expect(() =>
      loadConfig({ ...endpoint, OTEL_PROPAGATORS: 'tracecontext,b3', OTEL_TRACES_SAMPLER: 'xray', OTEL_TRACES_SAMPLER_ARG: '1.5' }),
    ).toThrow(
      [
        'Invalid configuration:',
        '  - OTEL_PROPAGATORS must be tracecontext, baggage (or both, comma-separated) or none: no other propagator is offered',
        '  - OTEL_TRACES_SAMPLER must be one of always_on, always_off, traceidratio, parentbased_always_on, parentbased_always_off, parentbased_traceidratio',
        '  - OTEL_TRACES_SAMPLER_ARG must be a sampling ratio from 0 to 1, such as 0.25',
      ].join('\n'),
    );
    expect(() => loadConfig({ ...endpoint, OTEL_PROPAGATORS: 'none,baggage' })).toThrow(
      'OTEL_PROPAGATORS none cannot be given with other propagators',
    );
  });

  it('refuse what cannot be sent over OTLP/HTTP, one clear line each', () => {
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(
      [
        'Invalid configuration:',
        '  - OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL such as http://127.0.0.1:4318 (traces are sent over OTLP/HTTP)',
        '  - OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json (traces are sent over OTLP/HTTP; grpc is not offered)',
      ].join('\n'),
    );
  });
});

describe('an OpenID Connect provider’s tokens (JWT_JWKS_URL, JWT_ISSUER, JWT_AUDIENCE, JWT_USER_CLAIM)', () => {
  const JWKS_URL = 'https://id.example.com/realms/chat/protocol/openid-connect/certs';

  it('are off unless JWT_JWKS_URL is given; the user id is in `sub` unless JWT_USER_CLAIM says otherwise', () => {
    expect(loadConfig({}).tokenProvider).toBeUndefined();
    expect(loadConfig({ JWT_JWKS_URL: JWKS_URL }).tokenProvider).toEqual({
      jwksUrl: JWKS_URL,
      issuer: undefined,
      audience: undefined,
      userClaim: 'sub',
    });
    expect(
      loadConfig({ JWT_JWKS_URL: JWKS_URL, JWT_ISSUER: 'https://id.example.com/realms/chat', JWT_AUDIENCE: 'chat', JWT_USER_CLAIM: 'uid' })
        .tokenProvider,
    ).toEqual({ jwksUrl: JWKS_URL, issuer: 'https://id.example.com/realms/chat', audience: 'chat', userClaim: 'uid' });
  });

  it('stand in for JWT_SECRET with MONGODB_URI, and may be set beside it', () => {
    const MONGODB_URI = 'mongodb://db.example.com/chat';
    expect(() => loadConfig({ MONGODB_URI })).toThrow(/JWT_SECRET or JWT_JWKS_URL is required when MONGODB_URI is set/);
    expect(loadConfig({ MONGODB_URI, JWT_JWKS_URL: JWKS_URL }).tokenProvider?.jwksUrl).toBe(JWKS_URL);
    const both = loadConfig({ MONGODB_URI, JWT_JWKS_URL: JWKS_URL, JWT_SECRET: 'a-secret-of-enough-length' });
    expect([both.jwtSecret, both.tokenProvider?.jwksUrl]).toEqual(['a-secret-of-enough-length', JWKS_URL]);
  });

  it('refuse a key set that is not an http(s) URL, and an issuer or audience without a key set', () => {
    expect(() => loadConfig({ JWT_JWKS_URL: 'id.example.com/certs' })).toThrow(/JWT_JWKS_URL must be an http\(s\) URL/);
    expect(() => loadConfig({ JWT_ISSUER: 'https://id.example.com' })).toThrow(/JWT_ISSUER applies to an OpenID Connect provider's tokens/);
    expect(() => loadConfig({ JWT_AUDIENCE: 'chat' })).toThrow(/JWT_AUDIENCE applies to an OpenID Connect provider's tokens/);
  });
});

describe('INTROSPECTION_USERS and GRAPHQL_BATCH_MAX', () => {
  it('name no one and 10 operations unless given', () => {
    expect([loadConfig({}).introspectionUsers, loadConfig({}).batchMax]).toEqual([[], 10]);
    expect(loadConfig({ INTROSPECTION_USERS: ' 7, 12,7 ', GRAPHQL_BATCH_MAX: '1' })).toMatchObject({
      introspectionUsers: [7, 12],
      batchMax: 1,
    });
  });

  it('refuse what is not a list of user ids, or a batch size out of range', () => {
    expect(() => loadConfig({ INTROSPECTION_USERS: 'alice' })).toThrow(/INTROSPECTION_USERS must be comma-separated user ids/);
    expect(() => loadConfig({ GRAPHQL_BATCH_MAX: '0' })).toThrow('GRAPHQL_BATCH_MAX must be a whole number from 1 to 1000');
  });
});

describe('DATA_DIR', () => {
  it('is .data in the working directory unless given; memory keeps the embedded engine in memory; MONGODB_URI ignores it', () => {
    expect(loadConfig({}).dataDir).toBe(resolve('.data'));
    expect(loadConfig({ DATA_DIR: 'var/chat' }).dataDir).toBe(resolve('var/chat'));
    expect(loadConfig({ DATA_DIR: 'memory' }).dataDir).toBeUndefined();
    expect(
      loadConfig({ MONGODB_URI: 'mongodb://db.example.com/chat', JWT_SECRET: 'a-secret-of-sixteen+', DATA_DIR: '/srv/x' }).dataDir,
    ).toBeUndefined();
  });
});
