/**
 * Runs inside each worker thread: loads the user's handler module once and calls its default
 * export with `(data, ctx)`. tinypool calls this module's default export for every task.
 *
 * @module
 */
import { BroadcastChannel, threadId } from 'node:worker_threads';
import { Tinypool } from 'tinypool';
import { THREW_NULL } from './threw-null.js';

/** What the main thread sends for each task. */
export interface ThreadTask {
  data: unknown;
  id: string;
  attempt: number;
  source: string;
  /** The job's key, in a queue bound with `keys`. */
  key: string | undefined;
  /** The abort-table cell of this task: where to say which thread runs it (see `ThreadPool.abort`). */
  cell: number;
  /** This task's number in its pool: tells its progress reports from those of an earlier task of the cell (an earlier attempt of the same job, too). */
  seq: number;
}

/** One `ctx.updateProgress` call, as it crosses to the main thread. @internal */
export interface ProgressReport {
  cell: number;
  seq: number;
  /** How many reports this task has sent, this one included. */
  n: number;
  value: unknown;
}

/** Shared with the main thread: per cell, the id of the thread running its task, then per cell an abort flag. @internal */
export interface ThreadWorkerData {
  handler: string;
  shared: Int32Array;
  cells: number;
  /** The name of the `BroadcastChannel` that progress reports go to. */
  reports: string;
}

/** The second argument of a thread handler. */
export interface ThreadContext {
  /** The job's id. */
  readonly id: string;
  /** Which attempt this is, from 1. */
  readonly attempt: number;
  /** Name of the source the job came from. */
  readonly source: string;
  /** The job's key in a queue bound with `keys` (SPEC 10); `undefined` elsewhere. */
  readonly key: string | undefined;
  /**
   * Reports progress, as `job.updateProgress` does in the main thread: the value (a number,
   * string, boolean or object) is structured-cloned to the main thread, recorded as the handle's
   * `progress` and emitted as `progress`. Every report made before the handler returns is
   * recorded before the job settles; one made after is ignored. Never throws, except for
   * `undefined` (a `TypeError`) and a value that cannot be cloned (a `DataCloneError`).
   */
  updateProgress(value: number | string | boolean | object): void;
}

type ThreadHandler = (data: unknown, ctx: ThreadContext) => unknown;

let handler: Promise<ThreadHandler> | undefined;

const workerData = Tinypool.workerData as ThreadWorkerData | undefined;

async function loadHandler(): Promise<ThreadHandler> {
  const href = workerData?.handler;
  if (typeof href !== 'string') throw new Error('qmux: thread started without a handler module');
  const module = await importHandler(href);
  let fn = module.default;
  // A handler compiled to CommonJS from `export default` arrives as { default: fn }.
  if (typeof fn === 'object' && fn !== null && typeof (fn as { default?: unknown }).default === 'function') {
    fn = (fn as { default: unknown }).default;
  }
  if (typeof fn !== 'function') {
    throw new TypeError(`qmux: the handler module ${href} must have a function as its default export, got ${typeof fn}`);
  }
  return fn as ThreadHandler;
}

/**
 * How Node says it cannot run a TypeScript handler by itself: Node 20 (or Node 22+ with type
 * stripping off) knows no `.ts` files; Node 22.18+ strips types but rejects TypeScript that
 * needs more than erasing (an `enum`, a parameter property).
 */
const NODE_CANNOT_RUN_TS = new Set(['ERR_UNKNOWN_FILE_EXTENSION', 'ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX']);

/** The part of `tsx/esm/api` used here (`tsImport` since tsx 4.8). */
interface TsxApi {
  tsImport?(specifier: string, parentURL: string): Promise<{ default?: unknown }>;
  register(): unknown;
}

/**
 * Imports the handler module. A TypeScript handler runs through Node's own type stripping where
 * Node has it (22.18+) and the handler needs nothing more. Otherwise it needs a loader in the
 * thread: the host's `--import tsx` flag reaches the thread, but on Node 20 tsx does not install
 * its hooks in worker threads that way (seen with tsx 4.23), so when Node cannot run a `.ts` file
 * we load it through tsx ourselves, in this thread, and without tsx fail with a hint.
 */
async function importHandler(href: string): Promise<{ default?: unknown }> {
  try {
    return (await import(href)) as { default?: unknown };
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (!NODE_CANNOT_RUN_TS.has(code as string) || !/\.[cm]?tsx?$/.test(new URL(href).pathname)) throw error;
    let api: TsxApi;
    try {
      api = (await import('tsx/esm/api' as string)) as TsxApi;
    } catch {
      const why = code === 'ERR_UNSUPPORTED_TYPESCRIPT_SYNTAX' ? ` that Node's type stripping cannot run (${(error as Error).message})` : '';
      throw new TypeError(`qmux: the handler ${href} is TypeScript${why}: install tsx, or compile the handler to JavaScript and point at that`, {
        cause: error,
      });
    }
    // tsImport loads the file (and what it imports) as its package says, ES module or CommonJS;
    // registering tsx's hooks for the whole thread fails for an ES module handler in a CommonJS package.
    if (typeof api.tsImport === 'function') return await api.tsImport(href, import.meta.url);
    api.register();
    // Node caches the failed import of `href`; a query string makes it a new module record.
    return (await import(`${href}${href.includes('?') ? '&' : '?'}qmux-tsx`)) as { default?: unknown };
  }
}

/** The channel reports go to, opened on this thread's first report. */
let reports: BroadcastChannel | undefined;

/** How long a finished task waits for the main thread to record its reports, at most (it always does, unless it is gone). */
const ACK_WAIT_MS = 10_000;

/** The `ctx` of one task. */
class TaskContext implements ThreadContext {
  readonly id: string;
  readonly attempt: number;
  readonly source: string;
  readonly key: string | undefined;
  readonly #cell: number;
  readonly #seq: number;
  #sent = 0;
  #done = false;

  constructor(task: ThreadTask) {
    this.id = task.id;
    this.attempt = task.attempt;
    this.source = task.source;
    this.key = task.key;
    this.#cell = task.cell;
    this.#seq = task.seq;
  }

  updateProgress(value: number | string | boolean | object): void {
    if (this.#done) return;
    if (value === undefined || value === null) {
      throw new TypeError(`qmux: ctx.updateProgress(value) needs a value (a number, string, boolean or object), got ${value}`);
    }
    if (reports === undefined) {
      reports = new BroadcastChannel((workerData as ThreadWorkerData).reports);
      reports.unref();
    }
    const report: ProgressReport = { cell: this.#cell, seq: this.#seq, n: this.#sent + 1, value };
    reports.postMessage(report); // throws if the value cannot be cloned: then it was not sent
    this.#sent++;
  }

  /** The handler returned: later reports are ignored; resolves once the main thread has recorded every one sent. */
  async finish(): Promise<void> {
    this.#done = true;
    const sent = this.#sent;
    if (sent === 0 || workerData === undefined) return;
    const shared = workerData.shared;
    const index = 2 * workerData.cells + this.#cell;
    const deadline = Date.now() + ACK_WAIT_MS;
    for (let acked = Atomics.load(shared, index); acked < sent; acked = Atomics.load(shared, index)) {
      const left = deadline - Date.now();
      if (left <= 0) return;
      const wait = (Atomics as unknown as AtomicsWaitAsync).waitAsync(shared, index, acked, left);
      if (wait.async) await wait.value;
    }
  }
}

/** `Atomics.waitAsync` (Node >= 16), which TypeScript's ES2022 library does not declare. */
interface AtomicsWaitAsync {
  waitAsync(
    array: Int32Array,
    index: number,
    value: number,
    timeout: number,
  ): { async: false; value: 'not-equal' | 'timed-out' } | { async: true; value: Promise<'ok' | 'timed-out'> };
}

export default async function runTask(task: ThreadTask): Promise<unknown> {
  if (workerData !== undefined) {
    // Say which thread runs this cell's task, then check whether it was aborted before it got here: the
    // main thread sets the flag, then reads the id, so one side always sees the other.
    Atomics.store(workerData.shared, task.cell, threadId);
    if (Atomics.load(workerData.shared, workerData.cells + task.cell) !== 0) {
      endTask(task.cell);
      throw new Error('qmux: the job was aborted before its thread started it');
    }
  }
  try {
    handler ??= loadHandler(); // a module that fails to load fails every task of this thread, here
    const fn = await handler;
    const ctx = new TaskContext(task);
    try {
      return await fn(task.data, ctx);
    } finally {
      await ctx.finish();
    }
  } catch (error) {
    // tinypool settles a task whose error is null as a success: send it as a marker instead.
    throw error === null ? { [THREW_NULL]: true } : error;
  } finally {
    endTask(task.cell);
  }
}

/**
 * Takes the end of this thread's task before its result or error goes back: the cell goes from
 * this thread's id to 0. If the main thread took it first (`ABORTING`: a timeout or cancel that
 * ends this thread), nothing may be sent, or it would reach a pool that has dropped this thread
 * and hand it the next task: the thread waits to be terminated, which comes next.
 */
function endTask(cell: number): void {
  if (workerData === undefined) return;
  const shared = workerData.shared;
  if (Atomics.compareExchange(shared, cell, threadId, 0) === threadId) return;
  // Nobody notifies a task's cell: each wait lasts until the termination (the main thread may
  // already have given the cell to another task, so its value is not ABORTING any more).
  for (;;) Atomics.wait(shared, cell, Atomics.load(shared, cell));
}
