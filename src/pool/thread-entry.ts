/**
 * Runs inside each worker thread: loads the user's handler module once and calls its default
 * export with `(data, ctx)`. tinypool calls this module's default export for every task.
 *
 * @module
 */
import { threadId } from 'node:worker_threads';
import { Tinypool } from 'tinypool';

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
}

/** Shared with the main thread: per cell, the id of the thread running its task, then per cell an abort flag. @internal */
export interface ThreadWorkerData {
  handler: string;
  shared: Int32Array;
  cells: number;
}

/** The second argument of a thread handler. */
export interface ThreadContext {
  /** The job's id. */
  id: string;
  /** Which attempt this is, from 1. */
  attempt: number;
  /** Name of the source the job came from. */
  source: string;
  /** The job's key in a queue bound with `keys` (SPEC 10); `undefined` elsewhere. */
  key: string | undefined;
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
 * Imports the handler module. A TypeScript handler needs a loader in the thread too: the host's
 * `--import tsx` flag reaches the thread, but on Node 20 tsx does not install its hooks in worker
 * threads that way (seen with tsx 4.23), so when Node cannot load a `.ts` file we register tsx's
 * ESM hooks in this thread ourselves and try again.
 */
async function importHandler(href: string): Promise<{ default?: unknown }> {
  try {
    return (await import(href)) as { default?: unknown };
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (code !== 'ERR_UNKNOWN_FILE_EXTENSION' || !/\.[cm]?tsx?$/.test(new URL(href).pathname)) throw error;
    let api: { register(): unknown };
    try {
      api = (await import('tsx/esm/api' as string)) as { register(): unknown };
    } catch {
      throw new TypeError(`qmux: the handler ${href} is TypeScript: install tsx, or compile the handler to JavaScript and point at that`, {
        cause: error,
      });
    }
    api.register();
    // Node caches the failed import of `href`; a query string makes it a new module record.
    return (await import(`${href}${href.includes('?') ? '&' : '?'}qmux-tsx`)) as { default?: unknown };
  }
}

export default async function runTask(task: ThreadTask): Promise<unknown> {
  if (workerData !== undefined) {
    // Say which thread runs this cell's task, then check whether it was aborted before it got here: the
    // main thread sets the flag, then reads the id, so one side always sees the other.
    Atomics.store(workerData.shared, task.cell, threadId);
    if (Atomics.load(workerData.shared, workerData.cells + task.cell) !== 0) {
      throw new Error('qmux: the job was aborted before its thread started it');
    }
  }
  handler ??= loadHandler();
  const fn = await handler;
  return fn(task.data, { id: task.id, attempt: task.attempt, source: task.source, key: task.key });
}
