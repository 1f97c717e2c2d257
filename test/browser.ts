/**
 * Headless Chromium for the dashboard test and its screenshot: Debian's `chromium` driven by the
 * pinned puppeteer-core (which downloads no browser of its own), with a fresh profile in /tmp
 * and everything that would reach the network on its own turned off.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser } from 'puppeteer-core';

/** Where Debian's `chromium` package puts the browser. */
export const CHROMIUM = '/usr/bin/chromium';

/** Whether the browser is installed. */
export function hasChromium(): boolean {
  return existsSync(CHROMIUM);
}

/** Whether a missing browser fails the tests that need one (QMUX_REQUIRE_BROWSER=1, as CI sets) rather than skipping them. */
export const browserRequired: boolean = process.env.QMUX_REQUIRE_BROWSER === '1';

/** What to say when it is not. */
export const NO_CHROMIUM = `no browser at ${CHROMIUM}: install it with \`apt-get install chromium\` (QMUX_REQUIRE_BROWSER=1 makes this a failure)`;

/**
 * A browser with its own throwaway profile; `close()` ends it and removes the profile. `args`
 * adds switches (such as `--host-resolver-rules` to give a test name an address).
 */
export async function launchChromium(args: readonly string[] = []): Promise<{ browser: Browser; close(): Promise<void> }> {
  const { default: puppeteer } = await import('puppeteer-core');
  const profile = mkdtempSync(join(tmpdir(), 'qmux-chromium-'));
  const browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    userDataDir: profile,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      ...args,
    ],
  });
  return {
    browser,
    async close() {
      await browser.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}
