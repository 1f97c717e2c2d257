import type * as fs from 'node:fs';
import type * as os from 'node:os';
import type * as path from 'node:path';
import type * as nodeUrl from 'node:url';
import { checkTimeout } from '../sources/add-options.js';
import * as check from '../internal/validate.js';
import type { Job } from '../api/jobs.js';
import { checkResourceLimits, checkThreadCount, MAX_THREADS, type ThreadPoolOptions } from '../pool/thread-options.js';
import type { RetryOptions } from '../api/retry.js';
import { checkRetryOptions } from './retry.js';
import { contextsSupported } from './async-context.js';
import { assertStrategy, currentDefaultStrategy, type Picker, type Strategy } from '../strategies/index.js';
import { nodeBuiltin } from './host.js';

/**
 * A handler: does one job. It may return a value or a promise; throwing or rejecting fails the job.
 *
 * @typeParam T - job data
 * @typeParam R - result
 */
export type Handler<T, R> = (job: Job<T>) => R | PromiseLike<R>;

/**
 * The job data of a function worker: a function to call, with its `Job` as the only argument
 * (so it can read `job.signal` and call `job.updateProgress`); one that takes no argument works too.
 */
export type Task<R> = (job: Job<Task<R>>) => R | PromiseLike<R>;

/** Options for `new Worker(...)`. All are optional. */
export interface WorkerOptions {
  /**
   * Most jobs running at once: a positive integer or `Infinity`. Default 1. In a threads worker,
   * the number of threads: an integer from 1 to 1024, default `os.availableParallelism()`.
   */
  concurrency?: number;
  /** Where handlers run: `'async'` (default for a function handler: slots in the main thread). */
  pool?: 'async';
  /** Which source gives the next job. Default: the current default strategy (`Strategy.Priority` unless changed). */
  strategy?: Strategy;
  /** Start dispatching at once. Default true; with false, nothing runs until `start()`. */
  autoRun?: boolean;
  /** Used in errors, events and a `Registry`. Default: generated (`worker-1`, `worker-2`..., skipping the names of live workers). */
  name?: string;
  /** Retry policy for every job (a job's `retry` add option overrides it field by field). Default: no retry. */
  retry?: RetryOptions;
  /** Fails an attempt that runs longer than this many ms (a finite number > 0, at most 2147483647); a job's `timeout` overrides it. Default: none. */
  timeout?: number;
  /** Most dead letters kept (an integer >= 0), oldest dropped first. Default 1000. */
  deadLetterLimit?: number;
  /**
   * Run each job's handler, and emit its events, in the async context of the call that added it
   * (`add`, `addAll`, `tryAdd`, `publish`, `redrive`), so that `AsyncLocalStorage.getStore()`
   * returns there what it returned at the add (SPEC 13). Default true; false saves the capture
   * per add (see docs/observability.md, "Async context").
   */
  asyncContext?: boolean;
}

/**
 * Options for a threads worker (`new Worker(url, options)`): the common options, and what passes
 * through to tinypool. Name the handler module with a URL built from your own module's,
 * `new Worker(new URL('../handler.js', import.meta.url), options)`: a relative path string
 * resolves against `process.cwd()`, so it works only when the process starts in the right
 * directory.
 */
export interface ThreadWorkerOptions extends Omit<WorkerOptions, 'pool'>, ThreadPoolOptions {
  /** `'threads'`: implied by a URL or path handler (a relative path resolves against `process.cwd()`). */
  pool?: 'threads';
}

const WORKER_OPTIONS = new Set(['concurrency', 'strategy', 'autoRun', 'name', 'retry', 'timeout', 'deadLetterLimit', 'pool', 'asyncContext']);
const THREAD_OPTIONS = new Set(['minThreads', 'idleTimeout', 'resourceLimits']);

/** A string that names a URL by its scheme (`https://...`, `data:...`) rather than a file path. */
const URL_LIKE = /^(?:[a-z][a-z\d+.-]+:\/\/|data:)/i;

/**
 * The module URL of a threads handler given as a URL or a path. Throws at construction for
 * anything a thread could not load (an empty path, a URL that is not `file:`, a path that does not
 * exist or is a directory): otherwise the worker would be made and every one of its jobs would fail.
 * A relative path is resolved against the current directory.
 */
function handlerModule(handler: URL | string): string {
  // Node-only, loaded here rather than at module load: the root entry stays browser-safe (SPEC 14).
  const { statSync } = nodeBuiltin<typeof fs>('node:fs', 'a threads worker');
  const { resolve: resolvePath } = nodeBuiltin<typeof path>('node:path', 'a threads worker');
  const { fileURLToPath, pathToFileURL } = nodeBuiltin<typeof nodeUrl>('node:url', 'a threads worker');
  if (handler === '') throw new TypeError('qmux: new Worker(handler): a handler module path must be a non-empty string, got ""');
  const url =
    handler instanceof URL ? handler : handler.startsWith('file:') || URL_LIKE.test(handler) ? new URL(handler) : pathToFileURL(resolvePath(handler));
  if (url.protocol !== 'file:') {
    throw new TypeError(`qmux: new Worker(handler): a handler module URL must be a file: URL (threads load modules from disk), got ${url.href}`);
  }
  let stats: fs.Stats;
  try {
    stats = statSync(fileURLToPath(url));
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (code === 'ENOENT' || code === 'ENOTDIR') throw new TypeError(`qmux: new Worker(handler): the handler module ${url.href} does not exist`);
    throw new TypeError(`qmux: new Worker(handler): the handler module ${url.href} cannot be read: ${(error as Error).message}`);
  }
  if (!stats.isFile()) {
    const what = stats.isDirectory() ? 'a directory' : 'not a regular file';
    throw new TypeError(`qmux: new Worker(handler): the handler module ${url.href} is ${what}; give the path or URL of the module file`);
  }
  return url.href;
}

/**
 * Refuses job data that a function worker cannot call: every add to one of its sources checks
 * it first (a topic, before it delivers to any subscription).
 *
 * @internal
 */
export function checkTaskData(data: unknown): void {
  if (typeof data !== 'function') throw new TypeError(`qmux: a function worker's job data must be a function, got ${check.describeValue(data)}`);
}

/** Calls a function worker's job: its data, with the job itself (SPEC 2). */
function runTask(job: Job<unknown>): unknown {
  const task = job.data;
  checkTaskData(task); // checked at each add already; a remote source's data (JSON) is checked here
  return (task as Task<unknown>)(job as Job<Task<unknown>>);
}

/**
 * A worker's constructor arguments, checked and with defaults applied.
 *
 * @internal
 */
export interface WorkerConfig {
  /** The handler; `undefined` for a threads worker, whose handler is its module. */
  handler: Handler<unknown, unknown> | undefined;
  /** The module URL of a threads worker's handler. */
  threadModule: string | undefined;
  /** Whether it is a function worker, whose job data must be functions (checked at each add). */
  functionWorker: boolean;
  concurrency: number;
  strategy: Strategy;
  picker: Picker;
  autoRun: boolean;
  name: string | undefined;
  retry: RetryOptions | undefined;
  timeout: number | undefined;
  deadLetterLimit: number;
  /** Whether jobs carry the async context of their add (and the runtime can carry one). */
  asyncContext: boolean;
  threadOptions: ThreadPoolOptions;
}

/**
 * Reads `new Worker(handler, options)` / `new Worker(options)`: which kind of worker, and every
 * option checked, throwing a `TypeError` or `RangeError` that names what is wrong.
 *
 * @internal
 */
export function resolveWorkerConfig(handlerOrOptions: unknown, maybeOptions: unknown): WorkerConfig {
  let handler: Handler<unknown, unknown> | undefined;
  let threadModule: string | undefined;
  let options: (WorkerOptions & ThreadWorkerOptions) | undefined;
  if (typeof handlerOrOptions === 'function') {
    handler = handlerOrOptions as Handler<unknown, unknown>;
    options = maybeOptions as typeof options;
  } else if (handlerOrOptions instanceof URL || typeof handlerOrOptions === 'string') {
    threadModule = handlerModule(handlerOrOptions);
    options = maybeOptions as typeof options;
  } else if (
    handlerOrOptions === undefined ||
    (typeof handlerOrOptions === 'object' && handlerOrOptions !== null && !Array.isArray(handlerOrOptions))
  ) {
    if (maybeOptions !== undefined) {
      throw new TypeError('qmux: new Worker(handler, options) needs a function, URL or path as handler; for a function worker pass only the options');
    }
    handler = runTask as Handler<unknown, unknown>;
    options = handlerOrOptions as typeof options;
  } else {
    throw new TypeError(
      'qmux: new Worker(handler) needs the handler to be a function, a module URL or a file path ' +
        `(or only options, for a function worker), got ${check.describeValue(handlerOrOptions)}`,
    );
  }
  check.optionsObject('worker options', options);
  for (const key of Object.keys(options ?? {})) {
    if (!WORKER_OPTIONS.has(key) && !(THREAD_OPTIONS.has(key) && threadModule !== undefined)) {
      throw new TypeError(
        THREAD_OPTIONS.has(key)
          ? `qmux: worker option "${key}" is for threads workers only (a module URL or path as handler)`
          : `qmux: unknown worker option "${key}"; allowed: ${[...WORKER_OPTIONS].join(', ')}` +
              (threadModule === undefined ? '' : `, ${[...THREAD_OPTIONS].join(', ')}`),
      );
    }
  }
  const poolOption = options?.pool;
  if (poolOption !== undefined && poolOption !== 'async' && poolOption !== 'threads') {
    throw new TypeError(`qmux: worker option "pool" must be 'async' or 'threads', got ${check.describeValue(poolOption)}`);
  }
  if (poolOption === 'threads' && threadModule === undefined) {
    throw new TypeError("qmux: worker option pool: 'threads' needs the handler as a module URL or file path, not a function");
  }
  if (poolOption === 'async' && threadModule !== undefined) {
    throw new TypeError("qmux: worker option pool: 'async' needs a function handler; a URL or path handler runs in threads");
  }
  const concurrency =
    options?.concurrency === undefined
      ? threadModule === undefined
        ? 1
        : Math.min(nodeBuiltin<typeof os>('node:os', 'a threads worker').availableParallelism(), MAX_THREADS)
      : threadModule === undefined
        ? check.positiveIntOrInfinity('worker option "concurrency"', options.concurrency)
        : checkThreadCount('worker option "concurrency"', options.concurrency);
  const strategy = options?.strategy === undefined ? currentDefaultStrategy() : options.strategy;
  assertStrategy('worker option "strategy"', strategy);
  const picker = strategy.create();
  if (picker === null || typeof picker !== 'object' || typeof picker.pick !== 'function') {
    throw new TypeError(`qmux: strategy "${strategy.name}": create() must return an object with a pick(list) method`);
  }
  // Called only once a second source is bound: a bad one would halt the worker then.
  const served = (picker as { served?: unknown }).served;
  if (served != null && typeof served !== 'function') {
    throw new TypeError(
      `qmux: strategy "${strategy.name}": the picker's served must be a method served(view) or left out (null counts as left out), got ${check.describeValue(served)}`,
    );
  }
  const autoRun = options?.autoRun === undefined ? true : check.boolean('worker option "autoRun"', options.autoRun);
  const asyncContext = options?.asyncContext === undefined ? true : check.boolean('worker option "asyncContext"', options.asyncContext);
  checkRetryOptions('worker option "retry"', options?.retry);
  const timeout = options?.timeout === undefined ? undefined : checkTimeout('worker option "timeout"', options.timeout);
  const deadLetterLimit =
    options?.deadLetterLimit === undefined ? 1000 : check.nonNegativeInt('worker option "deadLetterLimit"', options.deadLetterLimit);
  if (threadModule !== undefined) {
    const minThreads = options?.minThreads;
    if (minThreads !== undefined) {
      check.nonNegativeInt('worker option "minThreads"', minThreads);
      // tinypool would clamp it: the threads kept alive would silently not be the ones asked for.
      if (minThreads > concurrency) {
        const given = options?.concurrency === undefined ? `${concurrency}, the default: os.availableParallelism()` : `${concurrency}`;
        throw new RangeError(`qmux: worker option "minThreads" (${minThreads}) must be at most "concurrency" (${given}), the number of threads`);
      }
    }
    if (options?.idleTimeout !== undefined) {
      check.timerMs('worker option "idleTimeout"', check.nonNegativeMs('worker option "idleTimeout"', options.idleTimeout));
    }
    checkResourceLimits('worker option "resourceLimits"', options?.resourceLimits);
  }
  const name = options?.name === undefined ? undefined : check.nonEmptyString('worker option "name"', options.name);
  return {
    handler,
    threadModule,
    functionWorker: handler === runTask,
    concurrency,
    strategy,
    picker,
    autoRun,
    name,
    retry: options?.retry,
    timeout,
    deadLetterLimit,
    asyncContext: asyncContext && contextsSupported,
    threadOptions: {
      minThreads: options?.minThreads,
      idleTimeout: options?.idleTimeout,
      resourceLimits: options?.resourceLimits,
    },
  };
}
