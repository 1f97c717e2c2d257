/**
 * The dashboard's own script (SPEC 11), run in node (vm) over a tiny fake DOM: `fetch` goes to
 * a real admin handler on 127.0.0.1, `Date.now()` is the test's, and the page's 1 s timer is
 * replaced by explicit ticks, so the history it keeps can be checked refresh by refresh with no
 * browser and no real-clock sleeps (test/dashboard.test.ts drives the page in a real browser).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import vm from 'node:vm';
import { afterEach, describe, expect, it } from 'vitest';
import { createAdminHandler, Registry, Worker } from '../src/index.js';
import { dashboardPage } from '../src/ops/dashboard-page.js';
import { closeServer } from './support/http-server.js';

let server: Server | undefined;
let base = '';
const workers: Worker<any, any>[] = [];

async function serve(registry: Registry, options?: { readOnly?: boolean }): Promise<void> {
  server = createServer(createAdminHandler(registry, options));
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', () => resolve()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

afterEach(async () => {
  await closeServer(server);
  server = undefined;
  await Promise.all(workers.splice(0).map((worker) => worker.stop().catch(() => undefined)));
});

function track<W extends Worker<any, any>>(worker: W): W {
  workers.push(worker);
  return worker;
}

// ------------------------------------------------------------------ a fake DOM for the page script

class FakeNode {
  readonly attrs = new Map<string, string>();
  children: FakeNode[] = [];
  parent: FakeNode | undefined;
  text = '';
  readonly listeners = new Map<string, ((event?: unknown) => unknown)[]>();
  readonly style: Record<string, string> = {};
  readonly dataset: Record<string, string> = {};
  className = '';
  title = '';
  placeholder = '';
  value = '';
  constructor(readonly tag: string) {}
  setAttribute(key: string, value: unknown): void {
    this.attrs.set(key, String(value));
    if (key === 'class') this.className = String(value);
  }
  getAttribute(key: string): string | null {
    return this.attrs.get(key) ?? null;
  }
  get textContent(): string {
    return this.text + this.children.map((child) => child.textContent).join('');
  }
  set textContent(text: string) {
    for (const child of this.children) child.parent = undefined;
    this.children = [];
    this.text = text;
  }
  append(...nodes: FakeNode[]): void {
    for (const node of nodes) {
      node.remove();
      node.parent = this;
      this.children.push(node);
    }
  }
  replaceChildren(...nodes: FakeNode[]): void {
    for (const child of this.children) child.parent = undefined;
    this.children = [];
    this.append(...nodes);
  }
  remove(): void {
    if (this.parent !== undefined) this.parent.children = this.parent.children.filter((child) => child !== this);
    this.parent = undefined;
  }
  addEventListener(type: string, listener: (event?: unknown) => unknown): void {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener]);
  }
  get tHead(): FakeNode | undefined {
    return this.children.find((child) => child.tag === 'thead');
  }
  get tBodies(): FakeNode[] {
    return this.children.filter((child) => child.tag === 'tbody');
  }
  /** Every descendant for which `test` holds. */
  findAll(test: (node: FakeNode) => boolean): FakeNode[] {
    const out: FakeNode[] = [];
    for (const child of this.children) {
      if (test(child)) out.push(child);
      out.push(...child.findAll(test));
    }
    return out;
  }
}

/** The dashboard's script running against `base`, with the clock and the 1 s timer in the test's hands. */
async function openPage(readOnly = false) {
  const html = dashboardPage(readOnly);
  const script = /<script>([\s\S]*?)<\/script>/.exec(html)?.[1] as string;
  const body = new FakeNode('body');
  body.dataset.readOnly = String(readOnly);
  const main = new FakeNode('main');
  const live = new FakeNode('span');
  body.append(main, live);
  let now = Date.UTC(2030, 0, 1);
  let scheduled: (() => Promise<void>) | undefined;
  let onSchedule: (() => void) | undefined;
  class FakeDate extends Date {
    constructor() {
      super(now);
    }
    static override now(): number {
      return now;
    }
  }
  const context = vm.createContext({
    document: {
      body,
      createElement: (tag: string) => new FakeNode(tag),
      createElementNS: (_ns: string, tag: string) => new FakeNode(tag),
      createTextNode: (text: string) => Object.assign(new FakeNode('#text'), { text }),
      querySelector: (selector: string) => (selector === 'main' ? main : null),
      getElementById: (id: string) => (id === 'live' ? live : null),
    },
    fetch: (url: string, init?: RequestInit) => {
      const { cache: _cache, ...rest } = (init ?? {}) as RequestInit & { cache?: string }; // node's fetch has no HTTP cache
      return fetch(new URL(url, `${base}/`), rest);
    },
    setTimeout: (fn: () => Promise<void>) => {
      scheduled = fn;
      onSchedule?.();
      return 1;
    },
    clearTimeout: () => undefined,
    Date: FakeDate,
  });
  const firstRefresh = new Promise<void>((resolve) => (onSchedule = resolve));
  vm.runInContext(script, context);
  await firstRefresh;
  onSchedule = undefined;
  return {
    main,
    live,
    /** Advances the page's clock by `ms` and runs the refresh its timer had scheduled. */
    async tick(ms = 1000): Promise<void> {
      now += ms;
      const fn = scheduled;
      scheduled = undefined;
      await fn?.();
    },
    polyline(worker: string, source: string, series: string): FakeNode | undefined {
      return main.findAll(
        (node) =>
          node.tag === 'polyline' &&
          node.getAttribute('data-worker') === worker &&
          node.getAttribute('data-source') === source &&
          node.getAttribute('data-series') === series,
      )[0];
    },
    button(worker: string, action: string): FakeNode | undefined {
      return main.findAll(
        (node) => node.tag === 'button' && node.getAttribute('data-worker') === worker && node.getAttribute('data-action') === action,
      )[0];
    },
    card(worker: string): FakeNode | undefined {
      return main.findAll((node) => node.tag === 'section' && node.getAttribute('data-worker') === worker)[0];
    },
  };
}

function pointCount(line: FakeNode | undefined): number {
  const points = line?.getAttribute('points') ?? '';
  return points === '' ? 0 : points.split(' ').length;
}

describe('the dashboard keeps each chart’s history itself', () => {
  it('a worker registered later gets a card of its own, and the cards already shown keep their five minutes', async () => {
    const mailer = track(new Worker<string, void>(() => undefined, { name: 'mailer', autoRun: false }));
    const emails = mailer.bindQueue({ name: 'emails' });
    const registry = new Registry().add(mailer);
    await serve(registry);
    const page = await openPage();
    for (let i = 0; i < 10; i++) {
      emails.add(`job ${i}`);
      await page.tick();
    }
    expect(pointCount(page.polyline('mailer', 'emails', 'waiting'))).toBe(11); // one point per refresh

    const thumbs = track(new Worker(() => undefined, { name: 'thumbnails', autoRun: false }));
    thumbs.bindQueue({ name: 'images' });
    registry.add(thumbs);
    await page.tick();
    expect(page.card('thumbnails')).toBeDefined();
    expect(pointCount(page.polyline('thumbnails', 'images', 'waiting'))).toBe(1);
    expect(pointCount(page.polyline('mailer', 'emails', 'waiting'))).toBe(12);
    expect(page.main.children.map((card) => card.getAttribute('data-worker'))).toEqual(['mailer', 'thumbnails']);
  });

  it('keeps at most five minutes of points, and the starts per second over the last 5 s', async () => {
    const worker = track(new Worker<string, void>(() => undefined, { name: 'w' }));
    const queue = worker.bindQueue({ name: 'q' });
    await serve(new Registry().add(worker));
    const page = await openPage();
    for (let i = 0; i < 400; i++) {
      queue.add('a');
      queue.add('b');
      await worker.waitUntilIdle();
      await page.tick();
    }
    const points = pointCount(page.polyline('w', 'q', 'starts'));
    expect(points).toBeGreaterThanOrEqual(300);
    expect(points).toBeLessThanOrEqual(301);
    const rate = page.main.findAll((node) => node.getAttribute('data-source') === 'q' && node.tag === 'tr')[0];
    expect(rate?.findAll((node) => node.getAttribute('data-field') === 'rate')[0]?.textContent).toBe('2.0');
  });
});
