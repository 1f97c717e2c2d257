import type { ResourceLimits, TransferListItem } from 'node:worker_threads';
import { Tinypool, type TinypoolWorker } from 'tinypool';
import { QmuxError } from '../errors.js';
import * as check from '../internal/validate.js';
import type { JobRecord } from '../job.js';
import { threadExecArgv } from './exec-argv.js';
import type { ThreadTask, ThreadWorkerData } from './thread-entry.js';

/** Options for a threads worker, passed through to tinypool. */
export interface ThreadPoolOptions {
  /** Threads kept alive even when idle (an integer >= 0, at most `concurrency`). Default 0. */
  minThreads?: number;
  /** Ms an idle thread above `minThreads` lives before it is released (a finite number >= 0). Default 1000. */
  idleTimeout?: number;
  /**
   * Memory limits of each thread (`node:worker_threads` `ResourceLimits`: `maxYoungGenerationSizeMb`,
   * `maxOldGenerationSizeMb`, `codeRangeSizeMb`, `stackSizeMb`, each a finite number > 0); a thread
   * past them crashes, failing its job.
   */
  resourceLimits?: ResourceLimits;
}

/**
 * A worker thread ended while it ran a job (its handler called `process.exit()`, say).
 * The job fails with this error; the thread is replaced.
 */
export class ThreadExitError extends QmuxError {
  /** The thread's exit code. */
  readonly exitCode: number;
  /** @internal */
  constructor(exitCode: number) {
    super(`qmux: the worker thread running this job exited with code ${exitCode}`);
    this.exitCode = exitCode;
  }
}

/** Whether a job's error means its thread died (exit or out of memory), as opposed to a throw. @internal */
export function isThreadCrash(error: unknown): boolean {
  return error instanceof ThreadExitError || (error as { code?: unknown } | null)?.code === 'ERR_WORKER_OUT_OF_MEMORY';
}

const ENTRY = new URL('./thread-entry.js', import.meta.url);

/** The most threads one worker may have (the shared abort table has this many slots). */
export const MAX_THREADS = 1024;

/**
 * A threads worker's concurrency is its number of threads: an integer from 1 to {@link MAX_THREADS}.
 * (`Infinity` threads means nothing, and more than the slot table holds would overrun it.)
 *
 * @internal
 */
export function checkThreadCount(name: string, value: unknown): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_THREADS) {
    const error = typeof value === 'number' ? RangeError : TypeError;
    throw new error(`qmux: ${name} of a threads worker is its number of threads: an integer from 1 to ${MAX_THREADS}, got ${check.describeValue(value)}`);
  }
  return value;
}

/** The fields of `node:worker_threads` `ResourceLimits`. */
const RESOURCE_LIMITS = ['maxYoungGenerationSizeMb', 'maxOldGenerationSizeMb', 'codeRangeSizeMb', 'stackSizeMb'] as const;

/**
 * `resourceLimits`: an object of `ResourceLimits` fields, each a finite number of MB > 0. Node
 * does not check them: a misspelt field or a negative stack size is ignored, and a negative heap
 * limit kills every thread as it starts, so every job would fail. `name` ends in a quoted option
 * name (`worker option "resourceLimits"`); a field's name goes inside the quotes.
 *
 * @internal
 */
export function checkResourceLimits(name: string, value: unknown): void {
  check.optionsObject(name, value);
  if (value === undefined) return;
  check.knownFields(name, value as object, RESOURCE_LIMITS);
  const field = (key: string): string => name.replace(/"$/, `.${key}"`);
  for (const key of RESOURCE_LIMITS) {
    const limit = (value as ResourceLimits)[key];
    if (limit !== undefined) check.positiveFiniteNumber(field(key), limit);
  }
}

/**
 * A failure that crossed from a thread as something other than an Error (Node passes an
 * uncloneable result's DataCloneError as a bare object) becomes an Error that says so.
 */
function asError(error: unknown): never {
  if (error instanceof Error) throw error;
  throw new ThreadTaskError(error);
}

/**
 * A thread reported a failure that is not an `Error`, typically because the job's result could
 * not be structured-cloned back to the main thread.
 */
export class ThreadTaskError extends QmuxError {
  /** What the thread reported. */
  readonly reported: unknown;
  /** @internal */
  constructor(reported: unknown) {
    super(
      `qmux: the worker thread failed the job with a non-Error value (${describe(reported)}); ` +
        'a result or error that cannot be structured-cloned arrives like this',
    );
    this.reported = reported;
  }
}

function describe(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/**
 * The threads half of the shell: runs one job per call in a tinypool thread. The worker's
 * dispatcher never starts more jobs than there are threads, so tinypool's queue is never used
 * to reorder work: the strategy alone decides the order.
 *
 * @internal
 */
export class ThreadPool {
  #pool: Tinypool | undefined = undefined;
  #maxThreads: number;
  readonly #handlerHref: string;
  readonly #options: ThreadPoolOptions;
  readonly #onPoolError: (error: unknown) => void;
  /** Threads we listen to for `exit`. */
  readonly #watched = new WeakSet<TinypoolWorker>();
  /** Per slot, the id of the thread running it (0 until it starts), then per slot an abort flag. */
  readonly #shared = new Int32Array(new SharedArrayBuffer(2 * MAX_THREADS * Int32Array.BYTES_PER_ELEMENT));
  readonly #slotOf = new Map<JobRecord, number>();
  readonly #freeSlots: number[] = [];
  #nextSlot = 0;

  constructor(handlerHref: string, maxThreads: number, options: ThreadPoolOptions, onPoolError: (error: unknown) => void) {
    this.#handlerHref = handlerHref;
    this.#maxThreads = maxThreads;
    this.#options = options;
    this.#onPoolError = onPoolError;
  }

  /**
   * Runs `job` in a thread; the promise settles with the handler's result or error.
   *
   * No AbortSignal goes to tinypool: a task with one takes tinypool's slower path (about 15% of
   * a tiny task's round trip, measured with the threads bench workload). To abort, the pool
   * instead learns which thread runs each slot through shared memory and ends that thread.
   */
  run(job: JobRecord, transfer: readonly TransferListItem[] | undefined): Promise<unknown> {
    const pool = (this.#pool ??= this.#createPool());
    const slot = this.#freeSlots.pop() ?? this.#nextSlot++;
    Atomics.store(this.#shared, slot, 0);
    Atomics.store(this.#shared, MAX_THREADS + slot, 0);
    this.#slotOf.set(job, slot);
    const task: ThreadTask = { data: job.data, id: job.id, attempt: job.attempts, source: job.home.name, slot };
    const promise = pool.run(task, { transferList: transfer as TransferListItem[] | undefined }) as Promise<unknown>;
    this.#watchNewThreads(pool);
    return promise.then(
      (value) => {
        this.#release(job);
        return value;
      },
      (error: unknown) => {
        this.#release(job);
        return asError(error);
      },
    );
  }

  /**
   * Ends the attempt of `job` if it runs here: its thread is terminated (and replaced), which
   * fails its task with `reason`. A task not started yet sees the abort flag and fails at once.
   */
  abort(job: JobRecord, reason: unknown): void {
    const slot = this.#slotOf.get(job);
    const pool = this.#pool;
    if (slot === undefined || pool === undefined) return;
    Atomics.store(this.#shared, MAX_THREADS + slot, 1);
    const runningOn = Atomics.load(this.#shared, slot);
    if (runningOn === 0) return; // not started: the thread will see the flag
    const thread = pool.threads.find((candidate) => (candidate as { threadId?: number }).threadId === runningOn);
    // tinypool's 'error' handler removes and terminates the thread and fails its task with `reason`.
    thread?.emit('error', reason instanceof Error ? reason : new Error(String(reason)));
  }

  #release(job: JobRecord): void {
    const slot = this.#slotOf.get(job);
    if (slot === undefined) return;
    this.#slotOf.delete(job);
    this.#freeSlots.push(slot);
  }

  /** Follows `setConcurrency`. */
  setMaxThreads(maxThreads: number): void {
    this.#maxThreads = maxThreads;
    const pool = this.#pool;
    if (pool === undefined) return;
    // tinypool reads its options live and has no setter for them.
    const options = pool.options as { maxThreads: number; minThreads: number };
    options.maxThreads = maxThreads;
    if (options.minThreads > maxThreads) options.minThreads = maxThreads;
  }

  /** Ends every thread; the next `run` starts a new pool. */
  async destroy(): Promise<void> {
    const pool = this.#pool;
    this.#pool = undefined;
    if (pool !== undefined) await pool.destroy();
  }

  #createPool(): Tinypool {
    const maxThreads = this.#maxThreads;
    const pool = new Tinypool({
      filename: ENTRY.href,
      maxThreads,
      minThreads: Math.min(this.#options.minThreads ?? 0, maxThreads),
      idleTimeout: this.#options.idleTimeout ?? 1000,
      resourceLimits: this.#options.resourceLimits,
      execArgv: threadExecArgv(process.execArgv),
      workerData: { handler: this.#handlerHref, shared: this.#shared, slots: MAX_THREADS } satisfies ThreadWorkerData,
    });
    // Without a listener an 'error' on the pool would crash the host (SPEC 7).
    pool.on('error', this.#onPoolError);
    return pool;
  }

  /**
   * tinypool 2.2 listens for a thread's 'error' but not its 'exit': a thread that calls
   * `process.exit()` would leave its task pending forever and its slot lost. We watch every
   * thread and turn an exit that tinypool did not ask for into the 'error' it does handle.
   */
  #watchNewThreads(pool: Tinypool): void {
    for (const thread of pool.threads) {
      if (this.#watched.has(thread)) continue;
      this.#watched.add(thread);
      thread.once('exit', (code: number) => this.#threadExited(thread, code));
    }
  }

  #threadExited(thread: TinypoolWorker, code: number): void {
    const pool = this.#pool;
    // tinypool removes a thread from `threads` before it terminates it on purpose (idle timeout,
    // abort, destroy); one still listed died by itself.
    if (pool === undefined || !pool.threads.includes(thread)) return;
    thread.emit('error', new ThreadExitError(code));
  }
}
