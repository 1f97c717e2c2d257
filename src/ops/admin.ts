import type { IncomingMessage, ServerResponse } from 'node:http';
import { type AllowedHosts, checkAllowedHosts, hostRefusal, isAllowedHost } from './allowed-hosts.js';
import { crossSiteRefusal } from './cross-site.js';
import { dashboardCsp, dashboardPage } from './dashboard-page.js';
import { InvalidStateError } from '../api/errors.js';
import * as check from '../internal/validate.js';
import { METRICS_CONTENT_TYPE } from '../observe/metrics.js';
import type { Registry } from './registry.js';
import type { Worker } from '../shell/worker.js';
import { messageOf } from '../api/describe.js';

/** Largest request body read, in bytes; a bigger one gets 413. */
const MAX_BODY = 64 * 1024;

/** A `node:http` request handler. */
export type AdminHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** Options of {@link createAdminHandler}. */
export interface AdminOptions {
  /**
   * Serve only what reads: the dashboard shows no controls, and every route that changes a
   * worker (`POST /workers/:name/pause|resume|start|stop`, `PUT /workers/:name/concurrency`)
   * answers 403. Default `false`.
   */
  readOnly?: boolean;
  /**
   * More host names to answer. The handler answers a request only when its `Host` header is an
   * IP address, `localhost` or a name under `.localhost`, or is listed here; any other gets 421
   * (a page whose name was turned to your address by DNS rebinding sends its own name). List the
   * names it is reached by (`["admin.example"]`; a leading dot, `".corp.example"`, allows the
   * name and its subdomains), or `true` to answer any name when a proxy in front checks it.
   * Default: none.
   */
  allowedHosts?: readonly string[] | true;
}

/**
 * The handler's registry: refused at once when it is not one, not at each request (a 500). Its
 * methods, not `instanceof`: a registry of another copy of qmux in the process serves as well.
 */
function checkRegistry(registry: unknown): void {
  const methods = registry as Partial<Record<'get' | 'names' | 'health' | 'metrics', unknown>> | null | undefined;
  if (
    typeof methods?.get !== 'function' ||
    typeof methods.names !== 'function' ||
    typeof methods.health !== 'function' ||
    typeof methods.metrics !== 'function'
  ) {
    throw new TypeError(`qmux: createAdminHandler(registry) takes a Registry (new Registry().add(worker)), got ${check.describeValue(registry)}`);
  }
}

const ADMIN_OPTIONS = ['readOnly', 'allowedHosts'] as const;

/** An HTTP error with the status to answer. */
class HttpError extends Error {
  readonly status: number;
  readonly headers: Record<string, string>;
  constructor(status: number, message: string, headers: Record<string, string> = {}) {
    super(message);
    this.status = status;
    this.headers = headers;
  }
}

const ACTIONS = new Set(['pause', 'resume', 'start', 'stop']);

/**
 * An admin API for the workers of a registry, as a handler for `node:http`:
 *
 * | request | answer |
 * |---|---|
 * | `GET /` | the dashboard: a live HTML page of every worker, with controls unless `readOnly` |
 * | `GET /metrics` | `registry.metrics()`, the Prometheus text format (`text/plain; version=0.0.4`) |
 * | `GET /overview` | `{ workers: [{ name, status, concurrency, health, stats }] }`: what the dashboard polls |
 * | `GET /health` | 200 when every worker is healthy, else 503; body: `registry.health()` |
 * | `GET /workers` | `{ workers: [{ name, status, concurrency, health }] }` |
 * | `GET /workers/:name` | `{ name, status, concurrency, health, stats }` |
 * | `POST /workers/:name/pause`, `resume`, `start`, `stop` | 200 `{ name, status }` |
 * | `PUT /workers/:name/concurrency` with `{ "concurrency": n }` | 200 `{ name, concurrency }` (`"Infinity"` allowed) |
 *
 * Each `GET` route answers `HEAD` too (the same status and headers, no body).
 *
 * Errors are JSON `{ "error": "..." }`: 400 for a malformed request, 404 for an unknown path or
 * worker, 405 for a wrong method, 409 for an action the worker's state forbids, 413 for a body
 * over 64 KiB (and the connection is closed), 403 for a mutating route of a `readOnly` handler
 * or one a page on another site could have sent, 421 for a `Host` that is not the handler's.
 *
 * It has no authentication of its own: mount it behind yours, since it can stop your workers.
 * It still refuses what any web page in a browser could send it (SPEC 11): a request whose `Host`
 * is not one of its own names gets 421 (see {@link AdminOptions.allowedHosts}), and a mutating
 * route (`POST`, `PUT`) answers 403 unless its `Content-Type` is `application/json` and its
 * `Origin` and `Sec-Fetch-Site`, when sent, say it comes from the handler's own origin. Its
 * dashboard sends all that; a script sends `Content-Type: application/json`.
 *
 * @example
 * ```ts
 * import { createServer } from 'node:http';
 * createServer(createAdminHandler(registry)).listen(9090, '127.0.0.1');
 * // A status page for everyone, controls for no one:
 * createServer(createAdminHandler(registry, { readOnly: true })).listen(9091, '127.0.0.1');
 * ```
 */
export function createAdminHandler(registry: Registry, options?: AdminOptions): AdminHandler {
  checkRegistry(registry);
  check.optionsObject('createAdminHandler options', options);
  if (options !== undefined) check.knownFields('createAdminHandler options', options, ADMIN_OPTIONS);
  const readOnly = options?.readOnly === undefined ? false : check.boolean('createAdminHandler option "readOnly"', options.readOnly);
  const allowedHosts: AllowedHosts = options?.allowedHosts === undefined ? [] : checkAllowedHosts(options.allowedHosts);
  const page = dashboardPage(readOnly);
  return (req, res) => {
    handle(registry, req, readOnly, allowedHosts, page)
      .then((reply) => (reply.text === undefined ? send(res, reply.status, reply.body) : sendText(res, reply.status, reply.text, reply.headers)))
      .catch((error: unknown) => {
        if (error instanceof HttpError) send(res, error.status, { error: error.message }, error.headers);
        else send(res, 500, { error: `qmux admin: ${messageOf(error)}` });
      });
  };
}

interface Reply {
  status: number;
  body?: unknown;
  /** A reply that is not JSON: its text and headers. */
  text?: string;
  headers?: Record<string, string>;
}

const PAGE_HEADERS: Record<string, string> = {
  'content-type': 'text/html; charset=utf-8',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
};

async function handle(registry: Registry, req: IncomingMessage, readOnly: boolean, allowedHosts: AllowedHosts, page: string): Promise<Reply> {
  if (!isAllowedHost(req.headers.host, allowedHosts)) throw new HttpError(421, hostRefusal(req.headers.host));
  const method = req.method ?? 'GET';
  const path = requestPath(req.url ?? '/');
  const parts = path
    .split('/')
    .filter((part) => part.length > 0)
    .map(decodePart);

  if (parts.length === 0) {
    allow(method, 'GET');
    PAGE_HEADERS['content-security-policy'] ??= dashboardCsp();
    return { status: 200, text: page, headers: PAGE_HEADERS };
  }
  if (parts.length === 1 && parts[0] === 'metrics') {
    allow(method, 'GET');
    return { status: 200, text: registry.metrics(), headers: { 'content-type': METRICS_CONTENT_TYPE, 'cache-control': 'no-store' } };
  }
  if (parts.length === 1 && parts[0] === 'overview') {
    allow(method, 'GET');
    const workers = registry.names().map((name) => {
      const worker = registry.get(name) as Worker<never, unknown>;
      return { ...summary(worker), stats: worker.stats() };
    });
    return { status: 200, body: { workers } };
  }
  if (parts.length === 1 && parts[0] === 'health') {
    allow(method, 'GET');
    const health = registry.health();
    return { status: health.status === 'healthy' ? 200 : 503, body: health };
  }
  if (parts[0] !== 'workers') throw new HttpError(404, `no such path: ${path}`);
  if (isMutation(method, parts)) {
    if (readOnly) throw new HttpError(403, 'this admin handler is read-only: it changes no worker');
    const refusal = crossSiteRefusal(req.headers);
    if (refusal !== undefined) throw new HttpError(403, refusal);
  }
  if (parts.length === 1) {
    allow(method, 'GET');
    const workers = registry.names().map((name) => summary(registry.get(name) as Worker<never, unknown>));
    return { status: 200, body: { workers } };
  }
  const name = parts[1] as string;
  const worker = registry.get(name);
  if (worker === undefined) throw new HttpError(404, `no worker named "${name}"`);
  if (parts.length === 2) {
    allow(method, 'GET');
    return { status: 200, body: { ...summary(worker), stats: worker.stats() } };
  }
  const action = parts[2] as string;
  if (parts.length === 3 && ACTIONS.has(action)) {
    allow(method, 'POST');
    try {
      if (action === 'pause') worker.pause();
      else if (action === 'resume') worker.resume();
      else if (action === 'start') worker.start();
      // stop() resolves once running jobs settle; answer at once with 'stopping' or 'stopped'.
      else void worker.stop().catch(() => undefined);
    } catch (error) {
      if (error instanceof InvalidStateError) throw new HttpError(409, error.message);
      throw error;
    }
    return { status: 200, body: { name: worker.name, status: worker.status } };
  }
  if (parts.length === 3 && action === 'concurrency') {
    allow(method, 'PUT');
    const body = await readJson(req);
    const value = (body as { concurrency?: unknown } | null)?.concurrency;
    const concurrency = value === 'Infinity' ? Infinity : value;
    if (typeof concurrency !== 'number') {
      throw new HttpError(400, 'body must be JSON { "concurrency": n } with n a positive integer or "Infinity"');
    }
    try {
      worker.setConcurrency(concurrency);
    } catch (error) {
      throw new HttpError(400, error instanceof Error ? error.message : String(error));
    }
    return { status: 200, body: { name: worker.name, concurrency: jsonNumber(worker.concurrency) } };
  }
  throw new HttpError(404, `no such path: ${path}`);
}

/** `POST /workers/:name/<action>` or `PUT /workers/:name/concurrency`, whether the worker exists or not. */
function isMutation(method: string, parts: readonly string[]): boolean {
  if (parts.length !== 3) return false;
  const action = parts[2] as string;
  return (method === 'POST' && ACTIONS.has(action)) || (method === 'PUT' && action === 'concurrency');
}

function summary(worker: Worker<never, unknown>): Record<string, unknown> {
  return { name: worker.name, status: worker.status, concurrency: jsonNumber(worker.concurrency), health: worker.health() };
}

/** JSON has no Infinity: say it as a string. */
function jsonNumber(n: number): number | string {
  return n === Infinity ? 'Infinity' : n;
}

/**
 * Refuses every method but `allowed` with 405. A route that answers GET answers HEAD too, as
 * HTTP asks of a server: the same status and headers, and `node:http` sends no body for it.
 */
function allow(method: string, allowed: 'GET' | 'POST' | 'PUT'): void {
  if (method === allowed || (method === 'HEAD' && allowed === 'GET')) return;
  const methods = allowed === 'GET' ? 'GET, HEAD' : allowed;
  throw new HttpError(405, `${method} is not allowed here; use ${methods}`, { allow: methods });
}

/**
 * The path of a request target, as sent. Not through the URL parser: it drops "." and ".."
 * segments (so `/workers/..` would be the page) and reads `//health` as a host (so a probe of
 * it would get the page with a 200, whatever the health). An absolute-form target (from a
 * proxy) gives its path.
 */
function requestPath(target: string): string {
  let path = target;
  if (!path.startsWith('/')) {
    const authority = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i.exec(path);
    if (authority === null) throw new HttpError(400, 'malformed request URL');
    path = path.slice(authority[0].length) || '/';
  }
  const end = path.search(/[?#]/);
  return end < 0 ? path : path.slice(0, end);
}

function decodePart(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new HttpError(400, `malformed path segment: ${part}`);
  }
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    // The rest of the body is not read: the connection must close, or its next request would
    // wait behind the unread bytes for an answer that never comes.
    if (size > MAX_BODY) throw new HttpError(413, `request body over ${MAX_BODY} bytes`, { connection: 'close' });
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new HttpError(400, 'request body is not valid JSON');
  }
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  // JSON has no Infinity (concurrency may be one) and drops an Error's fields: spell both out.
  const text = JSON.stringify(body, (_key, value: unknown) =>
    value === Infinity ? 'Infinity' : value instanceof Error ? { name: value.name, message: value.message } : value,
  );
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function sendText(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}
