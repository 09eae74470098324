import { readFileSync } from 'node:fs';

import semver from 'semver';
import { describe, expect, it } from 'vitest';

const lock = JSON.parse(readFileSync('package-lock.json', 'utf8')) as { packages: Record<string, { version?: string; engines?: unknown }> };
const supported = (JSON.parse(readFileSync('package.json', 'utf8')) as { engines: { node: string } }).engines.node;

describe('installing on the oldest Node this project supports', () => {
  it('installs no package whose engines exclude it, so npm prints no EBADENGINE warning', () => {
    const oldest = semver.minVersion(supported)!.version;
    const refusing = Object.entries(lock.packages)
      .filter(([, entry]) => typeof (entry.engines as { node?: unknown } | undefined)?.node === 'string')
      .filter(([, entry]) => !semver.satisfies(oldest, (entry.engines as { node: string }).node))
      .map(([path, entry]) => `${path}@${entry.version}: node ${(entry.engines as { node: string }).node}`);
    expect(oldest).toBe('20.19.0');
    expect(refusing).toEqual([]);
  });
});
