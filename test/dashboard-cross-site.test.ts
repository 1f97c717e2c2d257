/**
 * Issue 33, defect 5, in a real browser: a page on another origin must not be able to stop or
 * pause workers through the admin handler, and a page on a name rebound to the loopback (DNS
 * rebinding) must get nothing from it. Debian's chromium through the pinned puppeteer-core;
 * skipped with a notice without it, unless QMUX_REQUIRE_BROWSER=1, as test/dashboard.test.ts.
 *
 * Two loopback servers: the admin handler's, and the attacker's on another port (another
 * origin). Chromium is told that `rebound.test` is 127.0.0.1, which is what DNS rebinding does.
 * Every wait is on a cause (the handler answered the attacker's request), with generous bounds.
 */
import { createServer, type IncomingMessage, type RequestListener, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdminHandler, Registry, Worker } from '../src/index.js';
import { hasChromium, launchChromium, NO_CHROMIUM } from './browser.js';
import { closeServer } from './support/http-server.js';

declare const window: { attack?: { status: number; text: string }[] };

const available = hasChromium();
const required = process.env.QMUX_REQUIRE_BROWSER === '1';
if (!available && !required) console.warn(`[qmux] cross-site browser tests skipped: ${NO_CHROMIUM}`);

/** Generous on a loaded 2-core CI machine. */
const WAIT_MS = 15_000;

describe.runIf(!available && required)('the admin handler against other pages, in a browser', () => {
  it('needs chromium, since QMUX_REQUIRE_BROWSER=1', () => {
    throw new Error(`QMUX_REQUIRE_BROWSER=1 but ${NO_CHROMIUM}`);
  });
});

async function serve(listener: RequestListener): Promise<{ server: Server; port: number }> {
  const server = createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return { server, port: (server.address() as AddressInfo).port };
}

/** Resolves once `condition()` holds, checking every 20 ms; fails after {@link WAIT_MS}. */
async function until(what: () => string, condition: () => boolean): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function html(res: ServerResponse, body: string): void {
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
  res.end(`<!doctype html><html><body>${body}</body></html>`);
}

interface Seen {
  method: string;
  url: string;
  status: number;
  headers: IncomingMessage['headers'];
}

describe.runIf(available)('the admin handler against other pages, in a browser', () => {
  let chromium: Awaited<ReturnType<typeof launchChromium>> | undefined;
  let admin: Server | undefined;
  let attacker: Server | undefined;
  let adminPort = 0;
  let attackerPort = 0;
  /** Every request the admin handler answered, with its status. */
  const seen: Seen[] = [];
  const registry = new Registry();
  const workers = ['w1', 'w2', 'w3'].map((name) => {
    const worker = new Worker<number, void>(() => undefined, { name });
    worker.bindQueue({ name: 'jobs' });
    registry.add(worker);
    return worker;
  });
  const [w1, w2, w3] = workers as [Worker<number, void>, Worker<number, void>, Worker<number, void>];

  beforeAll(async () => {
    const handler = createAdminHandler(registry);
    ({ server: admin, port: adminPort } = await serve((req, res) => {
      res.on('finish', () => seen.push({ method: req.method ?? '', url: req.url ?? '', status: res.statusCode, headers: req.headers }));
      // The page a rebinding attacker served from rebound.test before its name turned to 127.0.0.1.
      if (req.url === '/attack' && req.headers.host?.startsWith('rebound.test')) {
        html(
          res,
          `<script>
            window.attack = [];
            const note = (r) => r.text().then((text) => window.attack.push({ status: r.status, text }));
            fetch("/workers").then(note);
            fetch("/workers/w3/stop", { method: "POST", headers: { "content-type": "application/json" } }).then(note);
          </script>`,
        );
        return;
      }
      handler(req, res);
    }));
    ({ server: attacker, port: attackerPort } = await serve((_req, res) => {
      const target = `http://127.0.0.1:${adminPort}`;
      html(
        res,
        `<iframe name="sink1"></iframe><iframe name="sink2"></iframe>
        <form method="POST" action="${target}/workers/w1/stop" target="sink1"><input name="confirm" value="1"></form>
        <form method="POST" action="${target}/workers/w1/pause" target="sink2" enctype="text/plain"><input name='{"a":"' value='"}'></form>
        <script>
          document.forms[0].submit();
          document.forms[1].submit();
          fetch("${target}/workers/w2/pause", { method: "POST", mode: "no-cors", body: "{}" });
          fetch("${target}/workers/w2/stop", { method: "POST", mode: "no-cors", headers: { "content-type": "application/json" }, body: "{}" });
        </script>`,
      );
    }));
    for (const worker of workers) worker.start();
    chromium = await launchChromium([`--host-resolver-rules=MAP rebound.test 127.0.0.1`]);
  });

  afterAll(async () => {
    await chromium?.close();
    await closeServer(admin);
    await closeServer(attacker);
    await registry.shutdown({ timeout: 5000 });
  });

  it('a page on another origin: form POSTs and no-cors fetch POSTs reach the handler and are refused; no worker is stopped or paused', async () => {
    const page = await (chromium as { browser: Browser }).browser.newPage();
    await page.goto(`http://127.0.0.1:${attackerPort}/`, { waitUntil: 'domcontentloaded' });
    const refused = () => seen.filter((s) => s.method === 'POST' && s.url.startsWith('/workers/'));
    await until(
      () => `the four cross-origin POSTs answered (so far ${JSON.stringify(seen.map((s) => [s.method, s.url, s.status]))})`,
      () => refused().length === 4,
    );
    await page.close();
    expect(
      refused()
        .map((s) => `${s.url} ${s.status}`)
        .sort(),
    ).toEqual(['/workers/w1/pause 403', '/workers/w1/stop 403', '/workers/w2/pause 403', '/workers/w2/stop 403']);
    // What the browser sent: a form's or no-cors fetch's content type (the JSON one was dropped), from the attacker's origin.
    for (const s of refused()) {
      expect(s.headers['content-type']).toMatch(/^(application\/x-www-form-urlencoded|text\/plain)/);
      expect(s.headers.origin).toBe(`http://127.0.0.1:${attackerPort}`);
    }
    expect(w1.status).toBe('idle');
    expect(w2.status).toBe('idle');
  });

  it('a page on a name rebound to 127.0.0.1: its same-origin reads and JSON POSTs get 421; the worker runs on', async () => {
    const page = await (chromium as { browser: Browser }).browser.newPage();
    await page.goto(`http://rebound.test:${adminPort}/attack`, { waitUntil: 'domcontentloaded' });
    await page.waitForFunction(() => (window.attack ?? []).length === 2, { timeout: WAIT_MS });
    const answers = await page.evaluate(() => window.attack ?? []);
    await page.close();
    for (const answer of answers) {
      expect(answer.status).toBe(421);
      expect(answer.text).not.toContain('"w1"');
    }
    const stop = seen.find((s) => s.url === '/workers/w3/stop');
    expect(stop?.headers.host).toBe(`rebound.test:${adminPort}`);
    expect(stop?.headers['content-type']).toBe('application/json');
    expect(w3.status).toBe('idle');
  });

  it("the same page from the handler's own origin passes: the rule stops other pages only", async () => {
    const page = await (chromium as { browser: Browser }).browser.newPage();
    await page.goto(`http://127.0.0.1:${adminPort}/`, { waitUntil: 'domcontentloaded' });
    const status = await page.evaluate(async () => {
      const response = await fetch('workers/w3/pause', { method: 'POST', headers: { 'content-type': 'application/json' } });
      return response.status;
    });
    await page.close();
    expect(status).toBe(200);
    expect(w3.status).toBe('paused');
    const pause = seen.find((s) => s.url === '/workers/w3/pause');
    expect(pause?.headers.origin).toBe(`http://127.0.0.1:${adminPort}`);
    expect(pause?.headers['sec-fetch-site']).toBe('same-origin');
  });
});
