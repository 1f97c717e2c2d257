/**
 * The admin handler (SPEC 8) behind a real `node:http` server on 127.0.0.1, port 0, driven with
 * the global fetch. Every error must be JSON `{ error }` with the right status.
 */
import { createHash } from 'node:crypto';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createAdminHandler, Registry, Worker, type SourceView, type Strategy, type WorkerStats } from '../src/index.js';
import { Worker as BuiltWorker } from '../dist/index.js';
import { Gate, deferred, flushMicrotasks } from './helpers.js';
import { closeServer } from './support/http-server.js';

let server: Server | undefined;
let base = '';
const workers: Worker<any, any>[] = [];
const gates: Gate<string>[] = [];

/** Serves `registry` on 127.0.0.1 at a free port. */
async function serve(registry: Registry, options?: { readOnly?: boolean }): Promise<void> {
  server = createServer(createAdminHandler(registry, options));
  await new Promise<void>((resolve, reject) => {
    server?.once('error', reject);
    server?.listen(0, '127.0.0.1', () => resolve());
  });
  const { port, address } = server.address() as AddressInfo;
  expect(address).toBe('127.0.0.1');
  base = `http://127.0.0.1:${port}`;
}

/** A registry with the given workers, served. */
async function serveWorkers(...list: Worker<any, any>[]): Promise<Registry> {
  return serveWith(undefined, ...list);
}

/** A registry with the given workers, served by a handler made with `options`. */
async function serveWith(options: { readOnly?: boolean } | undefined, ...list: Worker<any, any>[]): Promise<Registry> {
  const registry = new Registry();
  for (const worker of list) {
    workers.push(worker);
    registry.add(worker);
  }
  await serve(registry, options);
  return registry;
}

/** Closes the server, to serve again. */
async function unserve(): Promise<void> {
  const s = server;
  server = undefined;
  await closeServer(s);
}

afterEach(async () => {
  await closeServer(server);
  server = undefined;
  // Leave no job running between tests: stop starting jobs, then finish the ones that run.
  const stopping = workers.splice(0).map((worker) => worker.stop().catch(() => undefined));
  for (const gate of gates.splice(0)) gate.finishAll();
  await Promise.all(stopping);
});

interface Reply {
  status: number;
  body: any;
  headers: Headers;
}

/** A request as a script would send it: a POST or PUT says its body is JSON, as SPEC 11 asks of a mutating route. */
async function call(method: string, path: string, body?: string): Promise<Reply> {
  const init: RequestInit = { method };
  if (body !== undefined) init.body = body;
  if (body !== undefined || method === 'POST' || method === 'PUT') init.headers = { 'content-type': 'application/json' };
  const response = await fetch(`${base}${path}`, init);
  expect(response.headers.get('content-type')).toMatch(/^application\/json/);
  const text = await response.text();
  return { status: response.status, body: JSON.parse(text), headers: response.headers };
}

/** A HEAD request: its status, headers and whatever body came (there should be none). */
async function head(path: string): Promise<{ status: number; headers: Headers; text: string }> {
  const response = await fetch(`${base}${path}`, { method: 'HEAD' });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

/** Asserts a JSON error reply: status and a non-empty `error` string. */
function expectError(reply: Reply, status: number): void {
  expect(reply.status, JSON.stringify(reply.body)).toBe(status);
  expect(typeof reply.body.error).toBe('string');
  expect(reply.body.error.length).toBeGreaterThan(0);
}

/** A worker whose jobs run until the gate finishes them. */
function gated(name: string, options: { autoRun?: boolean; concurrency?: number } = {}) {
  const gate = new Gate<string>();
  gates.push(gate);
  const worker = new Worker<string, unknown>(gate.handler, { name, ...options });
  return { gate, worker, queue: worker.bindQueue({ name: 'jobs' }) };
}

/** A strategy that picks an ineligible entry while `broken` is set: the worker halts on that pick. */
let broken = true;
const pickIneligible: Strategy = {
  name: 'PickIneligible',
  create: () => ({ pick: (list: readonly SourceView[]) => list.find((view) => view.eligible !== broken) as SourceView }),
};

describe('GET /health', () => {
  it('200 with every worker healthy, with each worker in the body', async () => {
    await serveWorkers(new Worker(() => undefined, { name: 'a' }), new Worker(() => undefined, { name: 'b', autoRun: false }));
    const reply = await call('GET', '/health');
    expect(reply.status).toBe(200);
    expect(reply.body.status).toBe('healthy');
    expect(Object.keys(reply.body.workers)).toEqual(['a', 'b']);
    expect(reply.body.workers.a.status).toBe('healthy');
    expect(reply.body.workers.b.workerStatus).toBe('initiated');
  });

  it('lists a worker named "__proto__" in the body, and its own route answers', async () => {
    await serveWorkers(new Worker(() => undefined, { name: '__proto__' }), new Worker(() => undefined, { name: 'b' }));
    const reply = await call('GET', '/health');
    expect(reply.status).toBe(200);
    // JSON.parse makes "__proto__" an own key, as it is in the text.
    expect(Object.keys(reply.body.workers)).toEqual(['__proto__', 'b']);
    expect(Object.getOwnPropertyDescriptor(reply.body.workers, '__proto__')?.value).toMatchObject({ status: 'healthy' });
    const one = await call('GET', '/workers/__proto__');
    expect(one.status).toBe(200);
    expect(one.body.name).toBe('__proto__');
    expect(one.body.stats.name).toBe('__proto__');
  });

  it('200 for an empty registry', async () => {
    await serveWorkers();
    const reply = await call('GET', '/health');
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({ status: 'healthy', workers: {} });
  });

  it('503 when a worker is halted, naming it and the broken invariant', async () => {
    broken = true;
    const halted = new Worker<string, void>(() => undefined, { name: 'broken', strategy: pickIneligible });
    halted.bindQueue().add('x');
    halted.bindQueue();
    await flushMicrotasks();
    expect(halted.status).toBe('halted');
    await serveWorkers(new Worker(() => undefined, { name: 'fine' }), halted);
    const reply = await call('GET', '/health');
    expect(reply.status).toBe(503);
    expect(reply.body.status).toBe('halted');
    expect(reply.body.workers.fine.status).toBe('healthy');
    expect(reply.body.workers.broken.status).toBe('halted');
    expect(reply.body.workers.broken.reason).toMatch(/invariant/);
    // The error is spelled out, not dropped as {}.
    expect(reply.body.workers.broken.error.message).toMatch(/invariant/);

    // start() recovers (from halted), and health is 200 again.
    broken = false;
    const recovered = await call('POST', '/workers/broken/start');
    expect(recovered.status).toBe(200);
    expect(recovered.body.status).not.toBe('halted');
    expect((await call('GET', '/health')).status).toBe(200);
  });

  it('503 when a threads worker is degraded by repeated thread crashes', async () => {
    const threads = new BuiltWorker<string, string>(new URL('./fixtures/exit-thread.mjs', import.meta.url), { name: 'threads', concurrency: 1 });
    const q = threads.bindQueue();
    for (let i = 0; i < 3; i++) q.add(`crash ${i}`);
    await expect(q.add('ok').result()).resolves.toBe('ok');
    await serveWorkers(new Worker(() => undefined, { name: 'fine' }), threads as unknown as Worker<string, string>);
    const reply = await call('GET', '/health');
    expect(reply.status).toBe(503);
    expect(reply.body.status).toBe('degraded');
    expect(reply.body.workers.threads.status).toBe('degraded');
    expect(reply.body.workers.threads.reason).toMatch(/crash/);
  });
});

describe('GET /workers and /workers/:name', () => {
  it('lists every worker with its status and concurrency', async () => {
    await serveWorkers(
      new Worker(() => undefined, { name: 'mailer', concurrency: 3 }),
      new Worker(() => undefined, { name: 'unbounded', concurrency: Infinity, autoRun: false }),
    );
    const reply = await call('GET', '/workers');
    expect(reply.status).toBe(200);
    expect(reply.body.workers.map((w: { name: string }) => w.name)).toEqual(['mailer', 'unbounded']);
    expect(reply.body.workers[0]).toMatchObject({ name: 'mailer', status: 'idle', concurrency: 3, health: { status: 'healthy' } });
    expect(reply.body.workers[1]).toMatchObject({ name: 'unbounded', status: 'initiated', concurrency: 'Infinity' });
  });

  it('one worker: status, concurrency and its stats', async () => {
    const { gate, worker, queue } = gated('mailer', { concurrency: 2 });
    queue.add('a');
    queue.add('b');
    queue.add('c');
    await flushMicrotasks();
    await serveWorkers(worker);
    const reply = await call('GET', '/workers/mailer');
    expect(reply.status).toBe(200);
    expect(reply.body).toMatchObject({ name: 'mailer', status: 'running', concurrency: 2, health: { status: 'healthy' } });
    const stats = reply.body.stats as WorkerStats;
    expect(stats.name).toBe('mailer');
    expect(stats.running).toBe(2);
    expect(stats.waiting).toBe(1);
    expect(stats.counters).toMatchObject({ added: 3, started: 2 });
    expect(stats.sources.jobs).toMatchObject({ waiting: 1, due: 1, running: 2 });
    expect(stats.waitTime).toHaveProperty('p99');
    gate.finishAll();
  });

  it('decodes names: a worker named "a b/c" is /workers/a%20b%2Fc', async () => {
    await serveWorkers(new Worker(() => undefined, { name: 'a b/c' }));
    const reply = await call('GET', '/workers/a%20b%2Fc');
    expect(reply.status).toBe(200);
    expect(reply.body.name).toBe('a b/c');
  });

  it('404 for an unknown worker, on every route', async () => {
    await serveWorkers(new Worker(() => undefined, { name: 'known' }));
    expectError(await call('GET', '/workers/nobody'), 404);
    expectError(await call('POST', '/workers/nobody/pause'), 404);
    expectError(await call('PUT', '/workers/nobody/concurrency', '{"concurrency": 2}'), 404);
    expect((await call('GET', '/workers/nobody')).body.error).toContain('nobody');
  });
});

describe('POST /workers/:name/pause|resume|start|stop', () => {
  it('pause, resume, stop and start change the status and answer it', async () => {
    const { gate, worker, queue } = gated('w');
    await serveWorkers(worker);

    let reply = await call('POST', '/workers/w/pause');
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({ name: 'w', status: 'paused' });
    expect(worker.status).toBe('paused');

    queue.add('job');
    reply = await call('POST', '/workers/w/resume');
    expect(reply.body).toEqual({ name: 'w', status: 'running' });
    await flushMicrotasks();
    expect(gate.order).toEqual(['job']);

    // stop answers at once: 'stopping' while the job runs.
    reply = await call('POST', '/workers/w/stop');
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({ name: 'w', status: 'stopping' });
    gate.finishAll();
    await flushMicrotasks();
    expect(worker.status).toBe('stopped');
    expect((await call('GET', '/workers/w')).body.status).toBe('stopped');

    reply = await call('POST', '/workers/w/start');
    expect(reply.body).toEqual({ name: 'w', status: 'idle' });
    expect(worker.status).toBe('idle');
  });

  it('start works from initiated; a no-op call (pause twice, start twice) is 200', async () => {
    const { worker } = gated('w', { autoRun: false });
    await serveWorkers(worker);
    expect((await call('POST', '/workers/w/start')).body.status).toBe('idle');
    expect((await call('POST', '/workers/w/start')).status).toBe(200);
    expect((await call('POST', '/workers/w/pause')).status).toBe(200);
    expect((await call('POST', '/workers/w/pause')).body).toEqual({ name: 'w', status: 'paused' });
  });

  it('409 with a JSON error when the state forbids the call', async () => {
    const { worker } = gated('w', { autoRun: false });
    await serveWorkers(worker);
    // initiated: pause and resume are refused
    expectError(await call('POST', '/workers/w/pause'), 409);
    expectError(await call('POST', '/workers/w/resume'), 409);
    // paused: start is refused
    worker.start();
    worker.pause();
    const refused = await call('POST', '/workers/w/start');
    expectError(refused, 409);
    expect(refused.body.error).toContain('paused');
    // stopped: resume and pause are refused
    await worker.stop();
    const resume = await call('POST', '/workers/w/resume');
    expectError(resume, 409);
    expect(resume.body.error).toContain('stopped');
    expectError(await call('POST', '/workers/w/pause'), 409);
    expect(worker.status).toBe('stopped');
  });

  it('409 for start while stopping (jobs still running)', async () => {
    const { gate, worker, queue } = gated('w');
    queue.add('long');
    await flushMicrotasks();
    await serveWorkers(worker);
    const stopped = worker.stop();
    expect(worker.status).toBe('stopping');
    expectError(await call('POST', '/workers/w/start'), 409);
    gate.finishAll();
    await stopped;
  });
});

describe('PUT /workers/:name/concurrency', () => {
  it('sets a number, and "Infinity"', async () => {
    const { worker } = gated('w');
    await serveWorkers(worker);
    let reply = await call('PUT', '/workers/w/concurrency', JSON.stringify({ concurrency: 4 }));
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({ name: 'w', concurrency: 4 });
    expect(worker.concurrency).toBe(4);
    reply = await call('PUT', '/workers/w/concurrency', JSON.stringify({ concurrency: 'Infinity' }));
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({ name: 'w', concurrency: 'Infinity' });
    expect(worker.concurrency).toBe(Infinity);
    expect((await call('GET', '/workers/w')).body.concurrency).toBe('Infinity');
  });

  it('raising it starts waiting jobs', async () => {
    const { gate, worker, queue } = gated('w');
    for (const data of ['a', 'b', 'c']) queue.add(data);
    await flushMicrotasks();
    expect(gate.order).toEqual(['a']);
    await serveWorkers(worker);
    await call('PUT', '/workers/w/concurrency', '{"concurrency": 3}');
    await flushMicrotasks();
    expect(gate.order).toEqual(['a', 'b', 'c']);
    gate.finishAll();
  });

  it.each([
    ['0', '{"concurrency": 0}'],
    ['-1', '{"concurrency": -1}'],
    ['1.5', '{"concurrency": 1.5}'],
    ['"x"', '{"concurrency": "x"}'],
    ['"4" (a string)', '{"concurrency": "4"}'],
    ['null', '{"concurrency": null}'],
    ['a missing field', '{}'],
    ['a JSON null body', 'null'],
    ['a JSON array body', '[4]'],
    ['an empty body', ''],
    ['invalid JSON', '{"concurrency": '],
  ])('400 for %s, and the concurrency is unchanged', async (_label, body) => {
    const { worker } = gated('w', { concurrency: 2 });
    await serveWorkers(worker);
    expectError(await call('PUT', '/workers/w/concurrency', body), 400);
    expect(worker.concurrency).toBe(2);
  });

  it('413 for a body over 64 KiB', async () => {
    const { worker } = gated('w', { concurrency: 2 });
    await serveWorkers(worker);
    const big = JSON.stringify({ concurrency: 3, padding: 'x'.repeat(70 * 1024) });
    const reply = await rawRequest('PUT', '/workers/w/concurrency', big);
    expect(reply.status).toBe(413);
    expect(typeof JSON.parse(reply.text).error).toBe('string');
    expect(worker.concurrency).toBe(2);
    // Just under the limit is read.
    const fits = JSON.stringify({ concurrency: 3, padding: 'x'.repeat(60 * 1024) });
    expect((await call('PUT', '/workers/w/concurrency', fits)).status).toBe(200);
    expect(worker.concurrency).toBe(3);
  });
});

describe('paths and methods', () => {
  it.each([['/nope'], ['/healthz'], ['/metrics/extra'], ['/overview/extra'], ['/health/extra'], ['/workers/w/unknown'], ['/workers/w/pause/now']])(
    '404 JSON for the unknown path %s',
    async (path) => {
      await serveWorkers(new Worker(() => undefined, { name: 'w' }));
      expectError(await call('GET', path), 404);
    },
  );

  it.each([
    ['POST', '/health', 'GET, HEAD'],
    ['DELETE', '/workers', 'GET, HEAD'],
    ['PUT', '/workers/w', 'GET, HEAD'],
    ['HEAD', '/workers/w/stop', 'POST'],
    ['GET', '/workers/w/pause', 'POST'],
    ['PUT', '/workers/w/stop', 'POST'],
    ['POST', '/workers/w/concurrency', 'PUT'],
    ['GET', '/workers/w/concurrency', 'PUT'],
  ])('405 for %s %s, with Allow: %s', async (method, path, allowed) => {
    const worker = new Worker(() => undefined, { name: 'w' });
    await serveWorkers(worker);
    if (method === 'HEAD') {
      const reply = await head(path);
      expect(reply.status).toBe(405);
      expect(reply.headers.get('allow')).toBe(allowed);
    } else {
      const reply = await call(method, path, method === 'GET' ? undefined : '{"concurrency": 1}');
      expectError(reply, 405);
      expect(reply.headers.get('allow')).toBe(allowed);
    }
    expect(worker.status).toBe('idle');
    expect(worker.concurrency).toBe(1);
  });

  it.each([['/'], ['/metrics'], ['/overview'], ['/health'], ['/workers'], ['/workers/w']])(
    'HEAD %s answers as GET would, without a body',
    async (path) => {
      const worker = new Worker(() => undefined, { name: 'w' });
      await serveWorkers(worker);
      const got = await fetch(`${base}${path}`);
      const text = await got.text();
      const reply = await head(path);
      expect(reply.status).toBe(got.status);
      expect(reply.headers.get('content-type')).toBe(got.headers.get('content-type'));
      expect(reply.headers.get('content-length')).toBe(String(Buffer.byteLength(text)));
      expect(reply.text).toBe('');
    },
  );

  it('HEAD /health says the health in its status', async () => {
    const worker = new Worker(() => undefined, { name: 'w' });
    await serveWorkers(worker);
    worker.bindQueue({ name: 'jobs' });
    expect((await head('/health')).status).toBe(200);
    await worker.stop();
    expect((await head('/health')).status).toBe((await fetch(`${base}/health`)).status);
  });

  it('a query string does not change the route', async () => {
    await serveWorkers(new Worker(() => undefined, { name: 'w' }));
    expect((await call('GET', '/health?verbose=1')).status).toBe(200);
  });

  it('routes the path as sent: //health is the health check, and /workers/. or /workers/.. is a worker name, not the page', async () => {
    const { worker } = gated('w');
    await serveWorkers(worker);
    worker.pause();
    const health = await rawRequest('GET', '//health', undefined);
    expect(health.status).toBe(200);
    expect(JSON.parse(health.text).workers.w.status).toBe('healthy');
    expect((await rawRequest('GET', '//metrics', undefined)).text).toMatch(/^# HELP /);
    expect((await rawRequest('GET', '/health/', undefined)).status).toBe(200);
    expect(JSON.parse((await rawRequest('GET', '/workers//w', undefined)).text).status).toBe('paused');
    for (const path of ['/workers/.', '/workers/..', '/workers/%2E%2E', '/workers/../health']) {
      const reply = await rawRequest('GET', path, undefined);
      expect(reply.status, path).toBe(404);
      expect(typeof JSON.parse(reply.text).error, path).toBe('string');
    }
    // A proxy's absolute-form target names the same routes.
    expect(JSON.parse((await rawRequest('GET', 'http://admin.example/workers/w?x=1', undefined)).text).status).toBe('paused');
    expect((await rawRequest('GET', 'http://admin.example/workers/..', undefined)).status).toBe(404);
    expect((await rawRequest('GET', 'http://admin.example', undefined)).text).toMatch(/^<!doctype html>/);
  });

  it('400 JSON for a malformed path segment', async () => {
    await serveWorkers(new Worker(() => undefined, { name: 'w' }));
    const reply = await rawRequest('GET', '/workers/%E0%A4%A', undefined);
    expect(reply.status).toBe(400);
    expect(typeof JSON.parse(reply.text).error).toBe('string');
  });

  it('serves concurrent requests while jobs run', async () => {
    const { gate, worker, queue } = gated('w');
    const started = deferred();
    worker.on('active', () => started.resolve());
    queue.add('x');
    await started.promise;
    await serveWorkers(worker);
    const replies = await Promise.all(Array.from({ length: 10 }, () => call('GET', '/workers/w')));
    expect(replies.every((reply) => reply.status === 200 && reply.body.status === 'running')).toBe(true);
    gate.finishAll();
  });
});

describe('readOnly: true', () => {
  const MUTATIONS: [string, string, string?][] = [
    ['POST', '/workers/w/pause'],
    ['POST', '/workers/w/resume'],
    ['POST', '/workers/w/start'],
    ['POST', '/workers/w/stop'],
    ['PUT', '/workers/w/concurrency', '{"concurrency": 5}'],
    ['POST', '/workers/nobody/pause'],
    ['PUT', '/workers/nobody/concurrency', '{"concurrency": 5}'],
  ];

  it.each(MUTATIONS)('403 JSON for %s %s, and the worker is unchanged', async (method, path, body) => {
    const { worker } = gated('w', { concurrency: 2 });
    await serveWith({ readOnly: true }, worker);
    const reply = await call(method, path, body);
    expectError(reply, 403);
    expect(reply.body.error).toMatch(/read-only/);
    expect(worker.status).toBe('idle');
    expect(worker.concurrency).toBe(2);
  });

  it('every other answer is the same as without it', async () => {
    // Nothing waits: an age that grows with real time would differ between the two rounds.
    const { worker } = gated('w', { autoRun: false, concurrency: 3 });
    const reads: [string, string][] = [
      ['GET', '/health'],
      ['GET', '/workers'],
      ['GET', '/workers/w'],
      ['GET', '/overview'],
      ['GET', '/workers/nobody'],
      ['GET', '/nope'],
      ['GET', '/workers/w/pause'], // 405: the method is wrong, whatever the mode
      ['DELETE', '/workers/w/concurrency'],
      ['POST', '/health'],
    ];
    const answers = async () => {
      const out: unknown[] = [];
      for (const [method, path] of reads) {
        const reply = await call(method, path);
        out.push([method, path, reply.status, reply.headers.get('allow'), reply.body]);
      }
      const metrics = await fetch(`${base}/metrics`);
      out.push([metrics.status, metrics.headers.get('content-type'), await metrics.text()]);
      return out;
    };
    const registry = new Registry().add(worker);
    workers.push(worker);
    await serve(registry);
    const writable = await answers();
    await unserve();
    await serve(registry, { readOnly: true });
    expect(await answers()).toEqual(writable);
    expect(worker.status).toBe('initiated');
  });

  it('createAdminHandler checks its options', () => {
    const registry = new Registry();
    expect(() => createAdminHandler(registry, { readOnly: false })).not.toThrow();
    expect(() => createAdminHandler(registry, {})).not.toThrow();
    expect(() => createAdminHandler(registry, 'ro' as never)).toThrow(TypeError);
    expect(() => createAdminHandler(registry, { readOnly: 1 as never })).toThrow(/"readOnly" must be true or false, got 1/);
    expect(() => createAdminHandler(registry, { readonly: true } as never)).toThrow(/unknown field "readonly"/);
  });
});

describe('GET / (the dashboard) and GET /overview', () => {
  async function page(options?: { readOnly?: boolean }): Promise<{ response: Response; html: string }> {
    await serveWith(options, new Worker(() => undefined, { name: 'w' }));
    const response = await fetch(`${base}/`);
    return { response, html: await response.text() };
  }

  it('one self-contained HTML page: inline style and script, allowed by hash, and requests to its own origin only', async () => {
    const { response, html } = await page();
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
    const csp = response.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    // The inline script and style are allowed by their hashes: the browser runs exactly these.
    const scripts = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => m[1] as string);
    const styles = [...html.matchAll(/<style>([\s\S]*?)<\/style>/g)].map((m) => m[1] as string);
    expect(scripts.length).toBe(1);
    expect(styles.length).toBe(1);
    const hash = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;
    expect(csp).toContain(`script-src ${hash(scripts[0] as string)}`);
    expect(csp).toContain(`style-src ${hash(styles[0] as string)}`);
    // Nothing to load from elsewhere: no src or href attribute, no absolute URL but SVG's namespace.
    expect(html).not.toMatch(/\s(src|href)=/);
    const urls = [...html.matchAll(/[a-z]+:\/\/[^\s"']*/g)].map((m) => m[0]);
    expect(new Set(urls)).toEqual(new Set(['http://www.w3.org/2000/svg']));
    expect(html).not.toMatch(/fetch\("\//); // relative requests: it works mounted under a prefix
  });

  it('says whether it is read-only; a POST is 405', async () => {
    expect((await page()).html).toContain('data-read-only="false"');
    await unserve();
    expect((await page({ readOnly: true })).html).toContain('data-read-only="true"');
    expectError(await call('POST', '/'), 405);
  });

  it('/overview lists every worker in order with its summary and stats', async () => {
    const { gate, worker, queue } = gated('mailer', { concurrency: Infinity });
    queue.add('a');
    await flushMicrotasks();
    await serveWorkers(worker, new Worker(() => undefined, { name: '__proto__', autoRun: false }));
    const reply = await call('GET', '/overview');
    expect(reply.status).toBe(200);
    expect(reply.body.workers.map((w: { name: string }) => w.name)).toEqual(['mailer', '__proto__']);
    expect(reply.body.workers[0]).toMatchObject({ name: 'mailer', status: 'running', concurrency: 'Infinity', health: { status: 'healthy' } });
    expect(reply.body.workers[0].stats.sources.jobs).toMatchObject({ running: 1, counters: { started: 1 } });
    expect(reply.body.workers[1].stats.status).toBe('initiated');
    gate.finishAll();
  });
});

/**
 * A request through node:http: for bodies fetch would refuse to send as is and for paths fetch
 * would normalise. Resolves with the status and body text.
 */
function rawRequest(method: string, path: string, body: string | undefined): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const { port } = server!.address() as AddressInfo;
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers: { 'content-type': 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    // The server may answer 413 and close before reading the whole body: that is fine.
    req.on('error', reject);
    req.end(body);
  });
}
