/**
 * What the admin handler refuses before it routes (SPEC 11, issue 33 defects 5 and 7), over a
 * real `node:http` server on 127.0.0.1 with raw requests, so that every header is the test's:
 * a `Host` that is not the handler's own (DNS rebinding) gets 421; a mutating route gets 403
 * unless its request could not have been sent cross-site by a page; a 413 closes the connection.
 */
import { createServer, request as httpRequest, Agent, type OutgoingHttpHeaders, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createAdminHandler, Registry, Worker, type AdminOptions } from '../src/index.js';
import { closeServer } from './support/http-server.js';

let server: Server | undefined;
let port = 0;
const workers: Worker<any, any>[] = [];

/** Serves one started worker named `w`, with the handler made with `options`. */
async function serveWorker(options?: AdminOptions): Promise<Worker<unknown, unknown>> {
  const worker = new Worker<unknown, unknown>(() => undefined, { name: 'w', concurrency: 2 });
  worker.bindQueue({ name: 'jobs' });
  workers.push(worker);
  server = createServer(createAdminHandler(new Registry().add(worker), options));
  await new Promise<void>((resolve) => server?.listen(0, '127.0.0.1', () => resolve()));
  port = (server.address() as AddressInfo).port;
  return worker;
}

afterEach(async () => {
  await closeServer(server);
  server = undefined;
  await Promise.all(workers.splice(0).map((worker) => worker.stop().catch(() => undefined)));
});

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: any;
}

/** One request with exactly these headers (a `host` header replaces the one node:http would send). */
function send(method: string, path: string, headers: OutgoingHttpHeaders, body?: string, agent?: Agent): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let body: unknown = text;
        try {
          body = text === '' ? undefined : JSON.parse(text);
        } catch {
          // not JSON (a page): the test reads the status
        }
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

const JSON_TYPE = { 'content-type': 'application/json' };

/** The handler's own origin, as the dashboard's page has it. */
const own = () => `http://127.0.0.1:${port}`;

describe('mutating routes refuse what a page on another site could send (SPEC 11)', () => {
  it.each([
    ['no Content-Type', {}],
    ['a form: application/x-www-form-urlencoded', { 'content-type': 'application/x-www-form-urlencoded' }],
    ['a form: multipart/form-data', { 'content-type': 'multipart/form-data; boundary=x' }],
    ['a form or a no-cors fetch: text/plain', { 'content-type': 'text/plain;charset=UTF-8' }],
    ['a JSON-like type that is not JSON', { 'content-type': 'application/json-patch+json' }],
    ['JSON from another origin', { ...JSON_TYPE, origin: 'http://evil.example' }],
    ['JSON from another port of the same host', { ...JSON_TYPE, origin: 'http://127.0.0.1:1' }],
    ['JSON from an opaque origin (a sandboxed frame, a data: URL)', { ...JSON_TYPE, origin: 'null' }],
    ['JSON with a malformed Origin', { ...JSON_TYPE, origin: 'not a url' }],
    ['JSON sent cross-site', { ...JSON_TYPE, 'sec-fetch-site': 'cross-site' }],
    ['JSON sent same-site (another port or subdomain)', { ...JSON_TYPE, 'sec-fetch-site': 'same-site' }],
    ['JSON sent with no initiator', { ...JSON_TYPE, 'sec-fetch-site': 'none' }],
  ] as [string, OutgoingHttpHeaders][])('403 for %s: the worker is not paused', async (_label, headers) => {
    const worker = await serveWorker();
    const answer = await send('POST', '/workers/w/pause', headers);
    expect(answer.status).toBe(403);
    expect(answer.body.error).toMatch(/application\/json|Origin|Sec-Fetch-Site/);
    expect(worker.status).toBe('idle');
  });

  it('403 for a same-origin Origin with a cross-site Sec-Fetch-Site: each header must pass', async () => {
    const worker = await serveWorker();
    const answer = await send('POST', '/workers/w/stop', { ...JSON_TYPE, origin: own(), 'sec-fetch-site': 'cross-site' });
    expect(answer.status).toBe(403);
    expect(answer.body.error).toContain('Sec-Fetch-Site');
    expect(worker.status).toBe('idle');
  });

  it('the message says what to send', async () => {
    await serveWorker();
    const form = await send('POST', '/workers/w/stop', { 'content-type': 'application/x-www-form-urlencoded' });
    expect(form.body.error).toBe(
      'a request that changes a worker must have Content-Type: application/json (got application/x-www-form-urlencoded), which a page on another site cannot send',
    );
    const origin = await send('POST', '/workers/w/stop', { ...JSON_TYPE, origin: 'http://evil.example' });
    expect(origin.body.error).toBe(
      `a request that changes a worker must come from this handler's own origin: Origin is http://evil.example, Host is 127.0.0.1:${port}`,
    );
  });

  it.each([
    ['JSON and nothing else (curl, a script)', JSON_TYPE],
    ['JSON with a charset, in capitals', { 'content-type': 'Application/JSON; charset=utf-8' }],
    ['JSON from its own origin (the dashboard)', { ...JSON_TYPE, origin: () => own(), 'sec-fetch-site': 'same-origin' }],
    ['JSON from its own origin, named localhost', { ...JSON_TYPE, host: () => `localhost:${port}`, origin: () => `http://localhost:${port}` }],
    ['JSON from its own origin on the default port', { ...JSON_TYPE, host: 'admin.localhost:80', origin: 'http://admin.localhost' }],
  ] as [string, Record<string, string | (() => string)>][])('200 for %s', async (_label, template) => {
    const worker = await serveWorker();
    const headers = Object.fromEntries(Object.entries(template).map(([name, value]) => [name, typeof value === 'function' ? value() : value]));
    const answer = await send('POST', '/workers/w/pause', headers);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(worker.status).toBe('paused');
  });

  it('PUT /concurrency with a JSON body labelled text/plain (what a no-cors fetch sends) is 403, and nothing changes', async () => {
    const worker = await serveWorker();
    const answer = await send('PUT', '/workers/w/concurrency', { 'content-type': 'text/plain' }, '{"concurrency": 9}');
    expect(answer.status).toBe(403);
    expect(worker.concurrency).toBe(2);
    expect((await send('PUT', '/workers/w/concurrency', JSON_TYPE, '{"concurrency": 9}')).status).toBe(200);
    expect(worker.concurrency).toBe(9);
  });

  it('a refused mutation says nothing of the worker: 403 for an unknown name too; reads need no header', async () => {
    await serveWorker();
    expect((await send('POST', '/workers/nobody/stop', {})).status).toBe(403);
    expect((await send('POST', '/workers/nobody/stop', JSON_TYPE)).status).toBe(404);
    expect((await send('GET', '/workers/w', { origin: 'http://evil.example', 'sec-fetch-site': 'cross-site' })).status).toBe(200);
    // A wrong method is still 405, with or without the headers.
    expect((await send('GET', '/workers/w/stop', {})).status).toBe(405);
    expect((await send('PUT', '/workers/w/stop', {})).status).toBe(405);
  });

  it('readOnly: a mutating route is still 403 for being read-only, headers or not', async () => {
    await serveWorker({ readOnly: true });
    expect((await send('POST', '/workers/w/stop', JSON_TYPE)).body.error).toContain('read-only');
    expect((await send('POST', '/workers/w/stop', {})).body.error).toContain('read-only');
  });
});

describe("Host: only the handler's own names (DNS rebinding)", () => {
  it.each([
    '127.0.0.1:PORT',
    '127.0.0.1',
    '10.1.2.3:8080',
    '[::1]:PORT',
    '[::ffff:7f00:1]',
    'localhost:PORT',
    'LocalHost',
    'localhost.',
    'admin.localhost:PORT',
    'a.b.localhost',
  ])('%s passes by default', async (host) => {
    await serveWorker();
    const answer = await send('GET', '/workers', { host: host.replace('PORT', String(port)) });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  });

  it.each([
    'evil.example',
    'evil.example:PORT',
    'localhost.evil.example',
    'localhostevil.example',
    'mylocalhost',
    '127.0.0.1.nip.io',
    'evil.example:PORT@127.0.0.1',
    '[::1',
    'a b',
  ])('%j gets 421 on every route, the dashboard and mutations included', async (host) => {
    const worker = await serveWorker();
    for (const [method, path] of [
      ['GET', '/'],
      ['GET', '/metrics'],
      ['GET', '/workers'],
      ['HEAD', '/health'],
      ['POST', '/workers/w/stop'],
    ] as const) {
      const answer = await send(method, path, {
        ...JSON_TYPE,
        host: host.replace('PORT', String(port)),
        origin: `http://${host.replace('PORT', String(port))}`,
      });
      expect(answer.status, `${method} ${path}`).toBe(421);
      if (method !== 'HEAD') expect(answer.body.error).toContain('allowedHosts');
    }
    expect(worker.status).toBe('idle');
  });

  it('no Host at all (HTTP/1.0) is 421 too: a browser always sends one, and this is no name of ours', async () => {
    await serveWorker();
    const socket = connect(port, '127.0.0.1');
    const received: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    await new Promise<void>((resolve) => socket.on('close', () => resolve()).write('GET /workers HTTP/1.0\r\n\r\n'));
    expect(Buffer.concat(received).toString('utf8')).toMatch(/^HTTP\/1\.1 421 /);
  });

  it('the 421 names the host and the option', async () => {
    await serveWorker();
    const answer = await send('GET', '/workers', { host: `evil.example:${port}` });
    expect(answer.body.error).toBe(
      'qmux admin answers only its own host names (IP addresses, localhost and *.localhost, and the createAdminHandler option allowedHosts): not "evil.example"',
    );
  });

  it('allowedHosts lists more names: exact, or with a leading dot the name and its subdomains; case does not matter', async () => {
    await serveWorker({ allowedHosts: ['Admin.Example', '.corp.example'] });
    for (const host of ['admin.example', `ADMIN.example:${port}`, 'corp.example', 'q.corp.example', 'a.b.corp.example', 'localhost', '127.0.0.1']) {
      expect((await send('GET', '/workers', { host })).status, host).toBe(200);
    }
    for (const host of ['x.admin.example', 'evilcorp.example', 'example', 'evil.example']) {
      expect((await send('GET', '/workers', { host })).status, host).toBe(421);
    }
  });

  it('allowedHosts: true answers any Host (behind a proxy that checks it); mutations keep their rule', async () => {
    const worker = await serveWorker({ allowedHosts: true });
    expect((await send('GET', '/workers', { host: 'anything.example' })).status).toBe(200);
    expect((await send('POST', '/workers/w/pause', { host: 'anything.example', 'content-type': 'text/plain' })).status).toBe(403);
    expect((await send('POST', '/workers/w/pause', { host: 'anything.example', ...JSON_TYPE, origin: 'http://anything.example' })).status).toBe(200);
    expect(worker.status).toBe('paused');
  });

  it('createAdminHandler checks allowedHosts', () => {
    const registry = new Registry();
    expect(() => createAdminHandler(registry, { allowedHosts: [] })).not.toThrow();
    const message = /createAdminHandler option "allowedHosts" must be true or an array of host names without port/;
    expect(() => createAdminHandler(registry, { allowedHosts: 'admin.example' as never })).toThrow(message);
    expect(() => createAdminHandler(registry, { allowedHosts: false as never })).toThrow(message);
    expect(() => createAdminHandler(registry, { allowedHosts: [''] })).toThrow(/allowedHosts\[0\].*got ""/);
    expect(() => createAdminHandler(registry, { allowedHosts: ['ok.example', 7 as never] })).toThrow(/allowedHosts\[1\].*got 7/);
    expect(() => createAdminHandler(registry, { allowedHosts: ['admin.example:9090'] })).toThrow(/allowedHosts\[0\].*"admin.example:9090"/);
    expect(() => createAdminHandler(registry, { allowedHosts: ['*.example'] })).toThrow(/leading dot.*"\.example"/);
  });
});

describe('413: the connection is closed, not left hanging (issue 33, defect 7)', () => {
  const big = JSON.stringify({ concurrency: 3, padding: 'x'.repeat(70 * 1024) });

  it('the 413 says Connection: close, and the next request of a keep-alive client is answered', async () => {
    const worker = await serveWorker();
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const refused = await send('PUT', '/workers/w/concurrency', JSON_TYPE, big, agent);
      expect(refused.status).toBe(413);
      expect(refused.headers.connection).toBe('close');
      const next = await Promise.race([
        send('GET', '/workers/w', {}, undefined, agent),
        new Promise<never>((_resolve, reject) => setTimeout(() => reject(new Error('the request after a 413 got no answer in 10 s')), 10_000)),
      ]);
      expect(next.status).toBe(200);
      expect(worker.concurrency).toBe(2);
    } finally {
      agent.destroy();
    }
  });

  it('on one raw socket: after the 413 the server closes it (a request sent behind the body is not left hanging)', async () => {
    await serveWorker();
    const socket = connect(port, '127.0.0.1');
    const received: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.on('error', () => undefined); // a reset while we still write is a close too
    const head = `PUT /workers/w/concurrency HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(big)}\r\n\r\n`;
    socket.write(head + big + `GET /health HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
    await Promise.race([
      closed,
      new Promise<never>((_resolve, reject) => setTimeout(() => reject(new Error('the socket was neither answered nor closed in 10 s')), 10_000)),
    ]).finally(() => socket.destroy());
    const text = Buffer.concat(received).toString('utf8');
    expect(text).toMatch(/^HTTP\/1\.1 413 /);
    expect(text).toMatch(/\r\nconnection: close\r\n/i);
  });
});
