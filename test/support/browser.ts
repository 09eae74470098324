import { existsSync } from 'node:fs';

import { type Browser, chromium } from 'playwright-core';

/** Debian's Chromium, driven by playwright-core (no browser download). */
const CHROMIUM = '/usr/bin/chromium';
const hasChromium = existsSync(CHROMIUM);
/** CI (which sets CI, as .ci/run does) must run the browser tests: there a missing Chromium fails them. */
const required = Boolean(process.env.CI);

/** Whether `what` (a browser test) is skipped here: only outside CI, and only without Chromium. Says so when it is. */
export function skipsBrowserTest(what: string): boolean {
  const skipped = !hasChromium && !required;
  if (skipped) console.warn(`${CHROMIUM} is missing: ${what} is skipped (apt-get install chromium to run it).`);
  return skipped;
}

/** Headless Chromium, or a clear failure when CI has none. */
export async function launchChromium(): Promise<Browser> {
  if (!hasChromium) throw new Error(`${CHROMIUM} is missing, and CI must run the browser tests: apt-get install chromium`);
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}
