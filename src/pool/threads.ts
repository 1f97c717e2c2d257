import type { kQueueOptions, Task, Tinypool, TinypoolWorker } from 'tinypool';
import type { JobProgress, JobRecord } from '../handles/job.js';
import { threadExecArgv } from './exec-argv.js';
import { ProgressReports } from './progress-reports.js';
import { StartQueue } from './start-queue.js';
import { ABORTING } from './task-cells.js';
import { asError, lostInTransit, noteThreadCrash, ThreadExitError, ThreadStartError, ThreadTaskError } from './thread-errors.js';
import { MAX_THREADS, type ThreadPoolOptions } from './thread-options.js';
import type { ThreadTask, ThreadWorkerData } from './thread-entry.js';
import type { ThreadTransferable } from '../api/transferable.js';
import { safeString } from '../api/describe.js';
import { inRootContext } from '../shell/async-context.js';

const ENTRY = new URL('./thread-entry.js', import.meta.url);

/**
 * tinypool, loaded when the first thread pool is made rather than with this module: the root
 * entry, which imports this file, must load nothing Node-only (SPEC 14).
 */
let tinypool: typeof import('tinypool') | undefined;
let tinypoolLoading: Promise<unknown> | undefined;
/**
 * In a variable, so that a bundler for the browser does not follow it (threads cannot run there,
 * nor in one bundled file: a thread loads `thread-entry.js` from disk).
 */
const TINYPOOL = 'tinypool';

function loadTinypool(): Promise<unknown> {
  tinypoolLoading ??= (import(TINYPOOL) as Promise<typeof import('tinypool')>).then((module) => {
    tinypool = module;
  });
  return tinypoolLoading;
}

/** What goes to tinypool per job: the task, and (under a symbol, which structured cloning skips) its job. */
type PoolTask = ThreadTask & { [K in typeof kQueueOptions]: JobRecord };

/** In `#beforeLoad`: the job was not aborted. */
const RUNS = Symbol('runs');

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
  /** Threads we listen to (for `exit`, `error` and their ready message). */
  readonly #watched = new WeakSet<TinypoolWorker>();
  /** Threads that said they are ready; one that dies before that could not start. */
  readonly #ready = new WeakSet<TinypoolWorker>();
  /** Jobs whose task we took back out of tinypool's queue and cancelled, with the error they fail with. */
  readonly #takenBack = new Map<JobRecord, unknown>();
  /** Threads that `abort` ended: their end is not a crash. */
  readonly #ended = new WeakSet<TinypoolWorker>();
  /**
   * Pools in which a thread died while starting. tinypool then stops keeping `minThreads` for good
   * (it no longer replaces a thread that ends), so such a pool's ended threads are made again by
   * recycling it once no task runs.
   */
  readonly #startFailed = new WeakSet<Tinypool>();
  /** Errors of threads that `abort` ended, after that: the pool 'error' they cause is not reported (for one microtask). */
  readonly #afterEnd = new Set<unknown>();
  /** Jobs whose thread died while it ran them, by itself (see `#threadFailed`). */
  readonly #diedUnder = new WeakSet<JobRecord>();
  /**
   * What killed threads that died by themselves: a task failed with one of these failed because
   * its thread died. That is how a thread that died after its task ended (posting a result that
   * could not be cloned) is told from a handler's throw of the same value.
   */
  readonly #killers = new WeakSet<object>();
  /**
   * Per cell, the id of the thread running its task (0 until it starts), then per cell an abort
   * flag, then per cell how many progress reports of its task were recorded (see `ProgressReports`).
   */
  readonly #shared = new Int32Array(new SharedArrayBuffer(3 * MAX_THREADS * Int32Array.BYTES_PER_ELEMENT));
  readonly #cellOf = new Map<JobRecord, number>();
  /** Per cell, the job whose task it holds. */
  readonly #jobAt: (JobRecord | undefined)[] = [];
  /** Per cell, the number of the task it holds (see `ThreadTask.seq`). */
  readonly #taskAt: number[] = [];
  /** Tasks handed to tinypool so far: each one's number. */
  #tasks = 0;
  /** Set when `minThreads` was lowered: the threads are recycled once no task runs. */
  #recycleWhenIdle = false;
  /** Where threads send `ctx.updateProgress` reports; open while the pool is. */
  readonly #reports: ProgressReports;
  /** Jobs given to `run` before tinypool had loaded, with what aborted them meanwhile (or `RUNS`). */
  readonly #beforeLoad = new Map<JobRecord, unknown>();
  readonly #freeCells: number[] = [];
  #nextCell = 0;

  constructor(
    handlerHref: string,
    maxThreads: number,
    options: ThreadPoolOptions,
    onPoolError: (error: unknown) => void,
    onProgress: (job: JobRecord, value: JobProgress) => void,
  ) {
    this.#reports = new ProgressReports(this.#shared, this.#jobAt, this.#taskAt, onProgress);
    this.#handlerHref = handlerHref;
    this.#maxThreads = maxThreads;
    this.#options = options;
    this.#onPoolError = onPoolError;
    // Made with the worker: jobs added at once find it loaded, or soon. A failure is each job's.
    loadTinypool().catch(() => {});
  }

  /**
   * Runs `job` in a thread; the promise settles with the handler's result or error.
   *
   * No AbortSignal goes to tinypool: a task with one takes tinypool's slower path (about 15% of
   * a tiny task's round trip, measured with the threads bench workload). To abort, the pool
   * instead learns which thread runs each cell's task through shared memory and ends that thread.
   *
   * Called in the job's async context, it works in the one qmux was loaded in (SPEC 13): the pool
   * and the threads it makes outlive the job and must not keep its context alive. The caller
   * awaits the promise in the job's context, so what follows the attempt runs there.
   */
  run(job: JobRecord, transfer: readonly ThreadTransferable[] | undefined): Promise<unknown> {
    return inRootContext(this.#start, job, transfer);
  }

  readonly #start = (job: JobRecord, transfer: readonly ThreadTransferable[] | undefined): Promise<unknown> => {
    if (tinypool === undefined) return this.#runOnceLoaded(job, transfer);
    const pool = (this.#pool ??= this.#createPool(tinypool));
    const cell = this.#freeCells.pop() ?? this.#nextCell++;
    Atomics.store(this.#shared, cell, 0);
    Atomics.store(this.#shared, MAX_THREADS + cell, 0);
    Atomics.store(this.#shared, 2 * MAX_THREADS + cell, 0);
    this.#cellOf.set(job, cell);
    this.#jobAt[cell] = job;
    const seq = ++this.#tasks;
    this.#taskAt[cell] = seq;
    const task: PoolTask = {
      data: job.data,
      id: job.id,
      attempt: job.attempts,
      source: job.home.name,
      key: job.key,
      cell,
      seq,
      [tinypool.kQueueOptions]: job,
    };
    const promise = pool.run(task, { transferList: transfer as ThreadTransferable[] | undefined }) as Promise<unknown>;
    this.#watchNewThreads(pool);
    return promise.then(
      (value) => {
        this.#release(job);
        return value;
      },
      (error: unknown) => this.#failed(job, error),
    );
  };

  /** `run`, for the first jobs of a process: once tinypool has loaded, unless aborted meanwhile. */
  #runOnceLoaded(job: JobRecord, transfer: readonly ThreadTransferable[] | undefined): Promise<unknown> {
    this.#beforeLoad.set(job, RUNS);
    return loadTinypool().then(
      () => {
        const aborted = this.#beforeLoad.get(job);
        this.#beforeLoad.delete(job);
        // The pool is made as it would have been without the wait (it starts minThreads threads).
        this.#pool ??= this.#createPool(tinypool as typeof import('tinypool'));
        if (aborted !== RUNS) throw asError(aborted);
        return this.#start(job, transfer);
      },
      (error: unknown) => {
        this.#beforeLoad.delete(job);
        throw new ThreadStartError(error);
      },
    );
  }

  /** The error a job's attempt fails with, once tinypool has failed its task with `error`. */
  #failed(job: JobRecord, error: unknown): never {
    this.#release(job);
    if (this.#takenBack.has(job)) {
      // tinypool failed it with its CancelError because we cancelled it; say why we did.
      const takenBack = this.#takenBack.get(job);
      this.#takenBack.delete(job);
      throw asError(takenBack);
    }
    const killed = typeof error === 'object' && error !== null && this.#killers.has(error);
    const failure = killed && lostInTransit(error) ? new ThreadTaskError({}, { cause: error }) : asError(error);
    if (this.#diedUnder.has(job) || killed) {
      this.#diedUnder.delete(job);
      noteThreadCrash(failure);
    }
    throw failure;
  }

  /**
   * Ends the attempt of `job` if it runs here: its thread is terminated (and replaced), which
   * fails its task with `reason`. A task not started yet sees the abort flag and fails at once.
   * A task is either still in the start queue or with a thread that has said it is ready (see
   * `#createPool`), which runs it at once: no task waits in a thread that may never start.
   * Like `run`, it works in the context qmux was loaded in: the thread made to replace the one
   * ended must not keep the job's context alive.
   */
  abort(job: JobRecord, reason: unknown): void {
    inRootContext(this.#end, job, reason);
  }

  readonly #end = (job: JobRecord, reason: unknown): void => {
    if (this.#beforeLoad.has(job)) {
      this.#beforeLoad.set(job, reason);
      return;
    }
    const cell = this.#cellOf.get(job);
    const pool = this.#pool;
    if (cell === undefined || pool === undefined) return;
    // Still in tinypool's queue, waiting for a thread that is starting (and may never be ready):
    // take it back so that it fails now and its slot frees.
    const waiting = (pool.options.taskQueue as StartQueue).take(job);
    if (waiting !== undefined) {
      this.#takenBack.set(job, reason);
      waiting.cancel();
      this.#endSpareStartingThread(pool);
      return;
    }
    Atomics.store(this.#shared, MAX_THREADS + cell, 1);
    const runningOn = Atomics.load(this.#shared, cell);
    if (runningOn <= 0) return; // not started (the thread will see the flag), or its result is on the way
    const thread = pool.threads.find((candidate) => (candidate as { threadId?: number }).threadId === runningOn);
    if (thread === undefined) return;
    // Take the end of the task from its thread: if it has just finished (cleared the cell), its
    // result is on the way and settles the attempt; ending the thread now would leave that
    // message to a pool that no longer knows the thread (a pool 'error', and the next task
    // handed to a thread being terminated).
    if (Atomics.compareExchange(this.#shared, cell, runningOn, ABORTING) !== runningOn) return;
    this.#ended.add(thread);
    // tinypool's 'error' handler removes and terminates the thread and fails its task with `reason`.
    thread.emit('error', reason instanceof Error ? reason : new Error(safeString(reason)));
  };

  /**
   * A task taken back out of the start queue leaves a thread starting for no task: one that may
   * never finish starting (a host preload that hangs in threads) would keep its place in the pool
   * for good. The newest such thread is ended, unless the pool keeps it for `minThreads`; its
   * death while starting is ours, not reported (tinypool then stops replacing threads in this
   * pool, which `#threadFailed` handles as for any thread that died while starting). A pool with
   * no thread left is made again by the next job.
   */
  #endSpareStartingThread(pool: Tinypool): void {
    const threads = pool.threads;
    if (threads.length <= (pool.options as { minThreads: number }).minThreads) return;
    const starting = threads.filter((thread) => !this.#ready.has(thread));
    if (starting.length <= (pool.options.taskQueue as StartQueue).size) return;
    const thread = starting[starting.length - 1] as TinypoolWorker;
    this.#ended.add(thread);
    const error = new Error('qmux: ended a worker thread that was still starting for a job that no longer needs it');
    this.#afterEnd.add(error); // tinypool reports the death of a thread that held no task as the pool's 'error'
    thread.emit('error', error);
    queueMicrotask(() => this.#afterEnd.delete(error)); // after the pool 'error' listener's own check
  }

  #release(job: JobRecord): void {
    const cell = this.#cellOf.get(job);
    if (cell === undefined) return;
    this.#cellOf.delete(job);
    this.#jobAt[cell] = undefined;
    this.#freeCells.push(cell);
    if (this.#recycleWhenIdle) this.#recycleIfIdle();
  }

  /** Follows `setConcurrency`. */
  setMaxThreads(maxThreads: number): void {
    this.#maxThreads = maxThreads;
    const pool = this.#pool;
    if (pool === undefined) return;
    // tinypool reads its options live and has no setter for them.
    const options = pool.options as { maxThreads: number; minThreads: number };
    options.maxThreads = maxThreads;
    // The configured minimum, as far as the threads allow: raised again, it is back.
    const minThreads = this.#minThreadsAt(maxThreads);
    const lowered = minThreads < options.minThreads;
    options.minThreads = minThreads;
    // tinypool starts an idle thread's timer only as it becomes idle, when it was within
    // `minThreads` then: the threads above the new minimum would never be let go. They are
    // recycled once none runs a task (tinypool would replace a busy one by itself after its task,
    // unwatched: see `#watchNewThreads`).
    if (lowered) this.#recycleWhenIdle = true;
    this.#recycleIfIdle();
  }

  /** The configured `minThreads`, as far as `maxThreads` threads allow. */
  #minThreadsAt(maxThreads: number): number {
    return Math.min(this.#options.minThreads ?? 0, maxThreads);
  }

  /** Recycles the threads (see `setMaxThreads`) if that is due and no task runs. */
  #recycleIfIdle(): void {
    const pool = this.#pool;
    if (!this.#recycleWhenIdle || this.#cellOf.size > 0 || pool === undefined) return;
    this.#recycleWhenIdle = false;
    this.#recycle(pool);
  }

  /**
   * Ends `pool`'s idle threads (a busy one after its task) and makes its `minThreads` again; the
   * new threads are watched before any of their events, which come on later turns of the loop.
   */
  #recycle(pool: Tinypool): void {
    pool.recycleWorkers().then(() => {
      if (this.#pool === pool) this.#watchNewThreads(pool);
    }, this.#onPoolError);
  }

  /** Ends every thread; the next `run` starts a new pool. */
  async destroy(): Promise<void> {
    const pool = this.#pool;
    this.#pool = undefined;
    this.#recycleWhenIdle = false; // a new pool starts with the minimum as it is then
    this.#reports.close();
    if (pool !== undefined) await endPool(pool);
  }

  #createPool(module: typeof import('tinypool')): Tinypool {
    const Tinypool = module.Tinypool;
    const maxThreads = this.#maxThreads;
    this.#reports.open();
    const minThreads = this.#minThreadsAt(maxThreads);
    const pool = new Tinypool({
      filename: ENTRY.href,
      maxThreads,
      // Not `minThreads`: tinypool 2.2 counts the threads it makes in its constructor as ready at
      // once, before they have even loaded, and hands them tasks. A task handed to a thread that
      // never finishes starting (a host preload that hangs in threads) could then not be taken
      // back, and a timeout or cancel could not end it: the thread has not said which task it
      // runs, so `abort` does not know which thread to end. Made below, the threads are counted
      // as ready only once they say so, and tasks wait in the start queue until then.
      minThreads: 0,
      // Not Atomics: an idle thread would block in Atomics.wait with its event loop stopped, so a
      // timer a handler left behind (a late throw, a process.exit) would fire during the next,
      // unrelated task and fail that job instead. The event loop of an idle thread runs.
      useAtomics: false,
      idleTimeout: this.#options.idleTimeout ?? 1000,
      resourceLimits: this.#options.resourceLimits,
      execArgv: threadExecArgv(process.execArgv),
      taskQueue: new StartQueue(module.kQueueOptions),
      workerData: { handler: this.#handlerHref, shared: this.#shared, cells: MAX_THREADS, reports: this.#reports.name } satisfies ThreadWorkerData,
    });
    // Without a listener an 'error' on the pool would crash the host (SPEC 7). Reported a
    // microtask later: the thread's own listeners, which run after tinypool's, say meanwhile
    // whether it is the late death of a thread `abort` ended (see `#watchNewThreads`).
    pool.on('error', (error: unknown) =>
      queueMicrotask(() => {
        if (!this.#afterEnd.delete(error)) this.#onPoolError(error);
      }),
    );
    if (minThreads > 0) {
      // tinypool reads its options live: from now on it keeps `minThreads` threads. On a pool with
      // no threads yet, recycleWorkers() only makes them, on a later microtask, and this pool's
      // first task (handed over right after this returns) waits for a started one in the queue.
      (pool.options as { minThreads: number }).minThreads = minThreads;
      this.#recycle(pool);
    }
    return pool;
  }

  /**
   * tinypool 2.2 listens for a thread's 'error' but not its 'exit': a thread that calls
   * `process.exit()` would leave its task pending forever and its slot lost. We watch every
   * thread and turn an exit that tinypool did not ask for into the 'error' it does handle.
   * We also note when a thread is ready, and handle the 'error' of one that dies before.
   * Threads are watched as soon as tinypool makes them (in `run`, or while it handles another
   * thread's 'error'), so their ready message, which comes later, is never missed.
   */
  #watchNewThreads(pool: Tinypool): void {
    for (const thread of pool.threads) {
      if (this.#watched.has(thread)) continue;
      this.#watched.add(thread);
      thread.once('message', (message: { ready?: unknown } | null) => {
        if (message?.ready === true) this.#ready.add(thread);
      });
      let failed = false;
      thread.on('error', (error: unknown) => {
        if (!failed) {
          failed = true;
          this.#threadFailed(pool, thread, error);
        } else if (this.#ended.has(thread)) {
          // A thread that `abort` ended died of its own error as well (its handler's uncaught
          // exception, say): its job settled already, so tinypool's pool 'error' for it says nothing.
          this.#afterEnd.add(error);
          queueMicrotask(() => this.#afterEnd.delete(error));
        }
      });
      thread.once('exit', (code: number) => this.#threadExited(thread, code));
    }
  }

  /**
   * Runs after tinypool's own 'error' listener, which removed the thread, failed the tasks it
   * held and, if the thread had been ready, made its replacement. A ready thread that we did not
   * end crashed: the job it ran counts as a crash, even when it fails with the uncaught exception
   * that killed the thread (tinypool's listener failed its task already, but our handler of that
   * failure runs on a later microtask, so it sees the mark). A thread that dies while starting
   * held no task (see `#createPool`) and is not replaced (tinypool stops replacing threads then,
   * so that a cause that stays does not start threads in a loop), and the tasks queued for it
   * would wait forever: fail those with a ThreadStartError now.
   */
  #threadFailed(pool: Tinypool, thread: TinypoolWorker, error: unknown): void {
    if (this.#pool !== pool) return; // destroyed: its tasks are settled already
    this.#watchNewThreads(pool);
    if (this.#ready.has(thread)) {
      if (!this.#ended.has(thread)) {
        // Its task (if it held one) fails with this error: tinypool's listener passed it on.
        if (typeof error === 'object' && error !== null) this.#killers.add(error);
        this.#noteCrashedJob(thread);
      }
      if (this.#startFailed.has(pool) && this.#minThreadsAt(pool.options.maxThreads as number) > 0) {
        this.#recycleWhenIdle = true;
        this.#recycleIfIdle();
      }
      return;
    }
    this.#startFailed.add(pool);
    const threads = pool.threads;
    const queue = pool.options.taskQueue as StartQueue;
    // Queued tasks beyond the threads still starting have none left that will take them (the
    // oldest first: the first thread to be ready would have taken it).
    let stranded = queue.size - threads.filter((other) => !this.#ready.has(other)).length;
    for (; stranded > 0; stranded--) {
      const task = queue.shift() as Task;
      this.#takenBack.set(queue.jobOf(task), new ThreadStartError(error));
      task.cancel();
    }
    if (threads.length === 0) {
      // An empty pool that no longer keeps `minThreads` or replaces crashed threads: the next
      // job gets a new one, which tries to start threads again.
      this.#pool = undefined;
      endPool(pool).catch(this.#onPoolError);
    }
  }

  /** Marks the job that `thread` ran when it died, if any. */
  #noteCrashedJob(thread: TinypoolWorker): void {
    const job = this.#jobRunBy(thread);
    if (job !== undefined) this.#diedUnder.add(job);
  }

  /** The job `thread` said it runs (the cell it wrote its id in), if any. */
  #jobRunBy(thread: TinypoolWorker): JobRecord | undefined {
    const threadId = (thread as { threadId?: number }).threadId;
    for (const [job, cell] of this.#cellOf) if (Atomics.load(this.#shared, cell) === threadId) return job;
    return undefined;
  }

  #threadExited(thread: TinypoolWorker, code: number): void {
    const pool = this.#pool;
    // tinypool removes a thread from `threads` before it terminates it on purpose (idle timeout,
    // abort, destroy); one still listed died by itself.
    if (pool === undefined || !pool.threads.includes(thread)) return;
    // A thread holds no task until it is ready (see `#createPool`); a ready one may have been
    // handed a task it has not yet said it runs, so "no job known" is all the message claims.
    const during = !this.#ready.has(thread) ? 'start' : this.#jobRunBy(thread) === undefined ? 'unknown' : 'job';
    thread.emit('error', new ThreadExitError(code, during));
  }
}

/**
 * Destroys `pool` for good: with `minThreads` at 0 first, so that threads still to be made for it
 * (see `ThreadPool#createPool`) are not made after it is destroyed.
 */
function endPool(pool: Tinypool): Promise<void> {
  (pool.options as { minThreads: number }).minThreads = 0;
  return pool.destroy();
}
