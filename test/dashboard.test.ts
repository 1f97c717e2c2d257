/**
 * The dashboard (SPEC 11) in a real headless browser: Debian's chromium through the pinned
 * puppeteer-core, against a node:http server with the admin handler over workers doing real
 * work on real timers. Without chromium the suite is skipped with a notice, unless
 * QMUX_REQUIRE_BROWSER=1 (which .ci/run sets), and then it fails.
 *
 * Real time is unavoidable here: every wait is on a cause (a selector, an attribute that
 * changed, a worker's status), with generous bounds.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdminHandler, Registry, Worker, type Job } from '../src/index.js';
import { hasChromium, launchChromium, NO_CHROMIUM } from './browser.js';
import { closeServer } from './support/http-server.js';

// The callbacks given to page.waitForFunction and page.evaluate run in the page, which has
// these; the test's own types (Node's) do not, and the DOM lib would apply to every file.
interface PageElement {
  textContent: string | null;
  getAttribute(name: string): string | null;
}
declare const document: {
  querySelector(selector: string): PageElement | null;
  querySelectorAll(selector: string): { length: number };
};
declare const window: { pwned?: number };

const available = hasChromium();
const required = process.env.QMUX_REQUIRE_BROWSER === '1';
if (!available && !required) console.warn(`[qmux] dashboard browser tests skipped: ${NO_CHROMIUM}`);

/** Generous on a loaded 2-core CI machine. */
const WAIT_MS = 15_000;

describe.runIf(!available && required)('the dashboard in a browser', () => {
  it('needs chromium, since QMUX_REQUIRE_BROWSER=1', () => {
    throw new Error(`QMUX_REQUIRE_BROWSER=1 but ${NO_CHROMIUM}`);
  });
});

/** A worker whose jobs sleep `ms` on real timers, fed by a producer every 100 ms. */
function busy(name: string, concurrency: number, sources: string[]): { worker: Worker<number, void>; stop(): void } {
  const worker = new Worker<number, void>((job: Job<number>) => new Promise((resolve) => setTimeout(resolve, job.data)), { name, concurrency });
  const queues = sources.map((source) => worker.bindQueue({ name: source }));
  let tick = 0;
  const producer = setInterval(() => {
    tick++;
    for (const [i, queue] of queues.entries()) if (queue.length < 50) for (let n = 0; n <= (tick + i) % 3; n++) queue.add(150 + 50 * i);
  }, 100);
  return { worker, stop: () => clearInterval(producer) };
}

async function serve(handler: ReturnType<typeof createAdminHandler>): Promise<{ server: Server; base: string }> {
  const server = createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return { server, base: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/** Resolves once `condition()` holds, checking every 20 ms; fails after {@link WAIT_MS}. */
async function until(what: string, condition: () => boolean): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** A page that records every request it makes (and lets only same-origin ones through) and every error. */
async function open(browser: Browser, url: string): Promise<{ page: Page; requests: string[]; errors: string[] }> {
  const page = await browser.newPage();
  await page.setViewport({ width: 1280, height: 900 });
  const requests: string[] = [];
  const errors: string[] = [];
  const origin = new URL(url).origin;
  await page.setRequestInterception(true);
  page.on('request', (request) => {
    requests.push(request.url());
    if (new URL(request.url()).origin === origin) void request.continue();
    else void request.abort();
  });
  page.on('pageerror', (error) => errors.push(String(error)));
  // A content-security-policy violation (an inline script or style not allowed) shows here.
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(message.text());
  });
  await page.goto(url, { waitUntil: 'domcontentloaded' });
  return { page, requests, errors };
}

const EVIL = '<img src=x onerror="window.pwned=1">';

describe.runIf(available)('the dashboard in a browser', () => {
  let chromium: Awaited<ReturnType<typeof launchChromium>> | undefined;
  let server: Server | undefined;
  let readOnlyServer: Server | undefined;
  let base = '';
  let readOnlyBase = '';
  const producers: (() => void)[] = [];
  const registry = new Registry();
  let mailer: Worker<number, void>;

  beforeAll(async () => {
    const a = busy('mailer', 4, ['emails', 'newsletters']);
    const b = busy('thumbnails', 2, ['uploads']);
    const c = busy(EVIL, 1, [`${EVIL} source`]);
    mailer = a.worker;
    producers.push(a.stop, b.stop, c.stop);
    registry.add(a.worker).add(b.worker).add(c.worker);
    ({ server, base } = await serve(createAdminHandler(registry)));
    ({ server: readOnlyServer, base: readOnlyBase } = await serve(createAdminHandler(registry, { readOnly: true })));
    chromium = await launchChromium();
  });

  afterAll(async () => {
    for (const stop of producers) stop();
    await chromium?.close();
    await closeServer(server);
    await closeServer(readOnlyServer);
    await registry.shutdown({ timeout: 5000 });
  });

  it('shows every worker with status, health, slots and its sources; names are text, never HTML', async () => {
    const { page, requests, errors } = await open((chromium as { browser: Browser }).browser, `${base}/`);
    await page.waitForSelector('section.worker [data-field="slots"]', { timeout: WAIT_MS });
    await page.waitForFunction(() => document.querySelectorAll('tr[data-source]').length === 4, { timeout: WAIT_MS });
    const cards = await page.$$eval('section.worker', (sections) =>
      sections.map((section) => ({
        name: section.getAttribute('data-worker'),
        title: section.querySelector('h2')?.textContent,
        status: section.querySelector('[data-field="status"]')?.textContent,
        health: section.querySelector('[data-field="health"]')?.textContent,
        slots: section.querySelector('[data-field="slots"]')?.textContent,
        sources: [...section.querySelectorAll('tr[data-source]')].map((row) => row.getAttribute('data-source')),
      })),
    );
    expect(cards.map((card) => card.name)).toEqual(registry.names());
    expect(cards.map((card) => card.title)).toEqual(registry.names());
    expect(cards[0]?.sources).toEqual(['emails', 'newsletters']);
    expect(cards[2]?.sources).toEqual([`${EVIL} source`]);
    for (const card of cards) {
      expect(['idle', 'running']).toContain(card.status);
      expect(card.health).toBe('healthy');
    }
    expect(cards[0]?.slots).toMatch(/^[0-4] \/ 4$/);
    expect(cards[1]?.slots).toMatch(/^[0-2] \/ 2$/);
    // The worker named like an <img> tag is shown as text: no image was made, no script ran.
    expect(await page.$$eval('img', (images) => images.length)).toBe(0);
    expect(await page.evaluate(() => window.pwned)).toBeUndefined();
    // Every source row has due, delayed, running and starts per second, as numbers.
    const cells = await page.$$eval('tr[data-source] td[data-field]', (tds) => tds.map((td) => td.textContent ?? ''));
    expect(cells.length).toBe(4 * 4);
    for (const cell of cells) expect(cell).toMatch(/^\d+(\.\d)?$/);
    await page.close();
    expect(errors).toEqual([]);
    expect(requests.length).toBeGreaterThan(1);
    for (const url of requests) expect(new URL(url).origin, url).toBe(base);
  });

  it('the chart moves every second: its lines change and gain points', async () => {
    const { page, requests, errors } = await open((chromium as { browser: Browser }).browser, `${base}/`);
    const selector = 'polyline[data-worker="mailer"][data-source="emails"][data-series="waiting"]';
    await page.waitForFunction(
      (s) => (document.querySelector(s)?.getAttribute('points') ?? '').split(' ').length >= 2,
      { timeout: WAIT_MS },
      selector,
    );
    const first = await page.$eval(selector, (line) => line.getAttribute('points') ?? '');
    await page.waitForFunction((s, before) => document.querySelector(s)?.getAttribute('points') !== before, { timeout: WAIT_MS }, selector, first);
    const second = await page.$eval(selector, (line) => line.getAttribute('points') ?? '');
    expect(second).not.toBe(first);
    expect(second.split(' ').length).toBeGreaterThan(first.split(' ').length);
    // Points are x,y pairs inside the drawing, the newest at the right edge.
    const points = second.split(' ').map((pair: string) => pair.split(',').map(Number));
    for (const [x, y] of points) {
      expect(Number.isFinite(x) && Number.isFinite(y)).toBe(true);
      expect(x).toBeGreaterThan(0);
    }
    // Starts per second are drawn too, one line per source.
    expect(await page.$$eval('polyline[data-series="starts"]', (lines) => lines.length)).toBe(4);
    await page.close();
    expect(errors).toEqual([]);
    for (const url of requests) expect(new URL(url).origin, url).toBe(base);
  });

  it('Pause, Resume and the concurrency field call the admin API: the worker changes server-side', async () => {
    const { page, requests, errors } = await open((chromium as { browser: Browser }).browser, `${base}/`);
    await page.waitForSelector('button[data-worker="mailer"][data-action="pause"]', { timeout: WAIT_MS });
    for (const label of ['Pause', 'Resume', 'Start', 'Stop', 'Set']) {
      const buttons = await page.$$eval(`button[data-worker="mailer"]`, (list) => list.map((b) => b.textContent));
      expect(buttons).toContain(label);
    }
    expect(await page.$$eval('[data-worker="mailer"] input[data-worker="mailer"]', (inputs) => inputs.length)).toBe(1);

    await page.click('button[data-worker="mailer"][data-action="pause"]');
    await until('mailer paused', () => mailer.status === 'paused' || mailer.status === 'pausing');
    await page.waitForFunction(() => /^paus/.test(document.querySelector('section[data-worker="mailer"] [data-field="status"]')?.textContent ?? ''), {
      timeout: WAIT_MS,
    });

    await page.click('button[data-worker="mailer"][data-action="resume"]');
    await until('mailer resumed', () => mailer.status === 'running' || mailer.status === 'idle');

    await page.type('input[data-worker="mailer"]', '3');
    await page.keyboard.press('Enter');
    await until('mailer at concurrency 3', () => mailer.concurrency === 3);
    await page.waitForFunction(() => / \/ 3$/.test(document.querySelector('section[data-worker="mailer"] [data-field="slots"]')?.textContent ?? ''), {
      timeout: WAIT_MS,
    });
    await page.type('input[data-worker="mailer"]', '4');
    await page.click('button[data-worker="mailer"][data-action="concurrency"]');
    await until('mailer at concurrency 4', () => mailer.concurrency === 4);

    // A call the worker's state refuses shows the API's error on the card: resume() after stop() is 409.
    await page.click('button[data-worker="mailer"][data-action="stop"]');
    await until('mailer stopped', () => mailer.status === 'stopped' || mailer.status === 'stopping');
    await page.click('button[data-worker="mailer"][data-action="resume"]');
    await page.waitForFunction(
      () => /cannot resume/.test(document.querySelector('section[data-worker="mailer"] .message.error')?.textContent ?? ''),
      { timeout: WAIT_MS },
    );
    // start() is allowed once the stop has completed (while it is still stopping, it is refused).
    await until('mailer stopped for good', () => mailer.status === 'stopped');
    await page.click('button[data-worker="mailer"][data-action="start"]');
    await until('mailer started again', () => mailer.status === 'running' || mailer.status === 'idle');
    await page.close();
    // The 409 above is a failed fetch the browser reports on the console; nothing else may be.
    expect(errors.filter((error) => !/409/.test(error))).toEqual([]);
    for (const url of requests) expect(new URL(url).origin, url).toBe(base);
  });

  it('readOnly: the same workers, and no control at all', async () => {
    const { page, requests, errors } = await open((chromium as { browser: Browser }).browser, `${readOnlyBase}/`);
    await page.waitForFunction((n) => document.querySelectorAll('section.worker [data-field="slots"]').length === n, { timeout: WAIT_MS }, 3);
    expect(await page.$$eval('section.worker', (sections) => sections.map((s) => s.getAttribute('data-worker')))).toEqual(registry.names());
    expect(await page.$$eval('button, input, select, textarea, form', (controls) => controls.length)).toBe(0);
    expect(await page.$eval('header', (header) => header.textContent)).toContain('read-only');
    await page.close();
    expect(errors).toEqual([]);
    for (const url of requests) expect(new URL(url).origin, url).toBe(readOnlyBase);
  });
});
