import { EventEmitter } from 'eventemitter3';
import { monotonicClock, type Clock } from './clock.js';
import { Core } from '../core/core.js';
import { KeyedJobs } from '../core/keys/keyed-jobs.js';
import { Phase, type WorkerStatus } from '../core/worker-state.js';
import type { DeadLetter } from '../api/dead-letter.js';
import type { InvariantError } from '../api/errors.js';
import type { WorkerEvents } from '../api/events.js';
import type { WorkerHealth } from '../observe/health.js';
import { FifoDueJobs, PriorityDueJobs } from '../core/due/due-jobs.js';
import * as check from '../internal/validate.js';
import { checkKeysOptions, type KeysOptions } from '../sources/keys.js';
import type { JobHandle, JobRecord } from '../handles/job.js';
import { ThreadPool } from '../pool/threads.js';
import { checkThreadCount } from '../pool/thread-options.js';
import { PriorityQueue } from '../sources/priority-queue.js';
import { Queue } from '../sources/queue.js';
import type { RemoteAdapter, RemoteBindOptions } from '../remote/adapter.js';
import { bindAdapter, checkRemoteBind } from '../remote/bind.js';
import { RemoteSource, type RemoteHost } from '../remote/remote-source.js';
import type { BindOptions } from '../api/bind-options.js';
import { checkBindOptions, type QueueBindOptions, type Source, type SourceHost } from '../sources/source.js';
import type { WorkerStats } from '../api/stats.js';
import { snapshot } from '../observe/stats.js';
import type { Strategy } from '../strategies/index.js';
import { Admission } from './admission.js';
import { Drive } from './drive.js';
import { emitDegraded } from './emit.js';
import { reportFault } from './faults.js';
import { ExitWatch, watchExit, workerNameInUse } from './exit-warning.js';
import { Remotes } from './remotes.js';
import { Runner } from './run.js';
import type { WorkerTap } from '../internal/worker-tap.js';
import { Subscription, type Topic } from '../sources/topic.js';
import { resolveWorkerConfig, type Handler, type Task, type ThreadWorkerOptions, type WorkerOptions } from './worker-options.js';

export type { WorkerStatus } from '../core/worker-state.js';
export type { Handler, Task, ThreadWorkerOptions, WorkerOptions } from './worker-options.js';
export type { WorkerHealth, HealthyWorker, DegradedWorker, HaltedWorker } from '../observe/health.js';

let workerCount = 0;

/** Sets a worker's tap (see {@link tapWorker}); assigned by the class's static block, which can reach the runner's and the admission's `tap`. */
let setTap: (worker: WorkerImpl<never, unknown>, tap: WorkerTap | null) => WorkerTap | null;

/**
 * Hooks `tap` into `worker` (or removes the tap with `null`), returning the tap it had: how
 * `qmux/otel` sees jobs added and runs attempts, without a listener or a wrapper when no
 * integration is on.
 *
 * @internal
 */
export function tapWorker(worker: WorkerImpl<never, unknown>, tap: WorkerTap | null): WorkerTap | null {
  return setTap(worker, tap);
}

/** A worker name no live worker has: `worker-<n>`, skipping names users gave. */
function generatedName(): string {
  let name: string;
  do name = `worker-${++workerCount}`;
  while (workerNameInUse(name));
  return name;
}

/**
 * The class behind {@link Worker}; the package exports it as `Worker` (the value typed by
 * {@link WorkerConstructor}, whose overloads TypeScript cannot give a class constructor) and the
 * type `Worker<T, R>`. Its user documentation is on {@link Worker}.
 *
 * This is the shell of SPEC 12: the core (`src/core/`) decides every transition; the shell
 * reads the clock, arms the one timer, runs handlers (in slots or threads) and user hooks,
 * settles promises and emits the events the core recorded, once each transition is complete.
 *
 * @typeParam T - job data
 * @typeParam R - what the handler returns
 */
// biome-ignore lint/suspicious/noUnsafeDeclarationMerging: the interface below only re-declares on/once/off, which the EventEmitter base implements
export class WorkerImpl<in out T = unknown, R = unknown> extends EventEmitter<WorkerEvents<T, R>> {
  /** The worker's name. */
  readonly name: string;
  /** The strategy it was created with. */
  readonly strategy: Strategy;
  readonly #core: Core;
  readonly #clock: Clock = monotonicClock;
  /** Runs handlers and hands their outcomes to the core. */
  readonly #runner: Runner<T, R>;
  /** The one loop: passes, the core's notes, the timer, the lifecycle. */
  readonly #drive: Drive<T, R>;
  /** How jobs come in: adds, cancels, purges. */
  readonly #admission: Admission<T, R>;
  /** What sources call: every change of a job goes through the shell. */
  readonly #host: SourceHost;
  /** The thread pool of a threads worker. */
  readonly #threads: ThreadPool | undefined = undefined;
  /** The bound remote sources (SPEC 9). */
  readonly #remotes = new Remotes<T, R>();
  #remoteHost: RemoteHost | undefined = undefined;
  #bindCount = 0;
  /** What the process's one `beforeExit` listener asks about this worker (see `shell/exit-warning.ts`). */
  readonly #exitWatch = new ExitWatch();
  /** Whether jobs carry the async context of their add (the `asyncContext` option, SPEC 13). */
  readonly #carriesContext: boolean;

  static {
    setTap = (worker, tap) => {
      const previous = worker.#runner.tap;
      worker.#runner.tap = tap;
      worker.#admission.tap = tap;
      return previous;
    };
  }

  constructor(handlerOrOptions?: Handler<T, R> | URL | string | WorkerOptions, maybeOptions?: WorkerOptions | ThreadWorkerOptions) {
    super();
    const config = resolveWorkerConfig(handlerOrOptions, maybeOptions);
    const { concurrency, strategy, threadModule } = config;
    this.#carriesContext = config.asyncContext;
    let handler = config.handler as Handler<T, R> | undefined;
    if (threadModule !== undefined) {
      const threads = new ThreadPool(
        threadModule,
        concurrency,
        config.threadOptions,
        (error) => reportFault(this, error, 'the thread pool failed'),
        (job, value) => this.#runner.progress(job, value, false),
      );
      this.#threads = threads;
      handler = (job) => threads.run(job as unknown as JobRecord, (job as unknown as JobRecord).ext?.transfer) as Promise<R>;
    }
    this.name = config.name ?? generatedName();
    this.strategy = strategy;
    const core = new Core({
      concurrency,
      picker: config.picker,
      strategyName: strategy.name,
      timeout: config.timeout,
      deadLetterLimit: config.deadLetterLimit,
      autoRun: config.autoRun,
      workClock: this.#clock,
    });
    this.#core = core;
    this.#runner = new Runner(core, this.#clock, handler as Handler<T, R>, config.retry, this.#threads, this);
    this.#drive = new Drive(core, this.#clock, this, this.#runner, this.#remotes, this.#threads, this.#carriesContext);
    const admission = new Admission<T, R>(core, this.#clock, this.#drive, this.#carriesContext);
    this.#admission = admission;
    const drive = this.#drive;
    this.#host = {
      clock: this.#clock,
      threads: threadModule !== undefined,
      functions: config.functionWorker,
      add: (source, data, priority, parsed, key) => admission.add(source, data, priority, parsed, key),
      cancel: (job, reason) => admission.cancel(job, reason),
      purge: (source, key) => admission.purge(source, key),
      wake: () => {
        if (core.phase === Phase.Started) drive.schedulePass();
      },
      progress: (job, value) => this.#runner.progress(job, value, true),
      retire: (source) => {
        core.retire(source);
        drive.react();
      },
    };
    watchExit(this.#exitWatch, this.name, core);
  }

  // ---------------------------------------------------------------- state

  /** Where the worker is in its lifecycle; see {@link WorkerStatus}. */
  get status(): WorkerStatus {
    return this.#core.status;
  }

  /** Most jobs running at once. Change it with {@link Worker.setConcurrency}. */
  get concurrency(): number {
    return this.#core.concurrency;
  }

  /** Jobs waiting in every source (not started yet), due or delayed. */
  get numPending(): number {
    return this.#core.queued;
  }

  /** Slots in use: running jobs, including cancelled ones whose handler has not returned yet. */
  get numProcessing(): number {
    return this.#core.slotsInUse;
  }

  /**
   * Jobs that have settled for good since the worker was made: succeeded, failed (after their
   * last attempt) or cancelled (purged, too), in every source. With `stats().counters.added` it
   * gives a progress line. A remote job the engine will run again is not counted.
   *
   * @example
   * ```ts
   * const progress = setInterval(() => console.log(`${worker.numSettled} of ${worker.stats().counters.added} done`), 1000);
   * await worker.waitUntilIdle();
   * clearInterval(progress);
   * ```
   */
  get numSettled(): number {
    const counters = this.#core.counters;
    return counters.succeeded + counters.failed + counters.cancelled;
  }

  /**
   * The bound sources, in list order (queues, priority queues, subscriptions and remote
   * sources); a closed or unsubscribed source stays until its jobs have run. A fresh array on
   * each read.
   */
  get sources(): Source<T, R>[] {
    return [...this.#core.list] as unknown as Source<T, R>[];
  }

  /**
   * Jobs that failed their last attempt, oldest first, at most `deadLetterLimit` of them.
   * Put one back with {@link Worker.redrive}.
   */
  get deadLetters(): readonly DeadLetter<T>[] {
    return this.#core.deadLetters.entries as readonly DeadLetter<T>[];
  }

  /**
   * Whether the worker can be trusted to make progress: `healthy`, `degraded` or `halted`
   * (with the reason and the error).
   */
  health(): WorkerHealth {
    const core = this.#core;
    if (core.phase === Phase.Halted) {
      const error = core.haltError as InvariantError;
      return { status: 'halted', reason: error.message, error, workerStatus: 'halted' };
    }
    const crashes = this.#runner.crashes;
    const degraded = crashes.degradedReason(this.#clock.now());
    if (degraded !== undefined) {
      return { status: 'degraded', reason: degraded, error: crashes.last, workerStatus: this.status };
    }
    const remote = this.#remotes.down();
    if (remote !== undefined) {
      return { status: 'degraded', reason: remote.degradedReason as string, error: remote.outage.error, workerStatus: this.status };
    }
    return { status: 'healthy', workerStatus: this.status };
  }

  /**
   * Counters, per-source numbers and timing percentiles. Cheap enough to poll.
   *
   * @example
   * ```ts
   * setInterval(() => {
   *   const s = worker.stats();
   *   console.log(`${s.counters.succeeded} done, ${s.waiting} waiting, p99 wait ${s.waitTime.p99} ms`);
   * }, 5000).unref();
   * ```
   */
  stats(): WorkerStats {
    const now = this.#clock.now();
    const core = this.#core;
    // A delayed job is due once its time has passed, whether or not a pass has run since (every
    // slot may be busy): it counts as due where it waits (see `snapshot`: a million of them are
    // counted, not moved), and a pass starts it if a slot is free.
    // So do keys whose rate window has opened (the promotion lets them in, out of the heap the
    // timer was armed for): a pass starts them too.
    // A read changes nothing (SPEC 12): the pass moves them, if a slot is free.
    if (core.delayed > 0 || core.dispatcher.timedKeys.length > 0) this.#drive.schedulePass();
    return snapshot(this.name, core, this.#runner.metrics, now);
  }

  /**
   * Purges every bound source: their waiting jobs (due or delayed) are removed and their handles
   * reject with a `CancelledError`; a remote source hands back what it holds claimed. Running
   * jobs go on. Returns how many jobs were removed. The command-line idiom: on Ctrl-C, purge, and
   * let `waitUntilIdle()` resolve once the running jobs are done.
   *
   * @example
   * ```ts
   * process.once('SIGINT', () => console.log(`dropped ${worker.purge()} waiting jobs`));
   * await worker.waitUntilIdle();
   * ```
   */
  purge(): number {
    let purged = 0;
    // A copy: a purged source that was closed or unsubscribed leaves the list at once.
    for (const source of [...this.#core.list] as Source[]) purged += source.purge();
    return purged;
  }

  /**
   * Takes a dead letter out of `deadLetters` and adds its job to its source again, with attempts
   * counted from 1 and the job's own id and `timeout` / `retry` options. Throws like `add` when the
   * source is full or closed, and `JobIdInUseError` when another job with its id is in use in that
   * source again (the entry then stays); a `TypeError` for an entry that is not one of this
   * worker's.
   *
   * @example
   * ```ts
   * for (const entry of worker.deadLetters.filter((e) => isTransient(e.error))) worker.redrive(entry);
   * ```
   */
  redrive(entry: DeadLetter<T>): JobHandle<R> {
    return this.#admission.redrive(entry, this.name);
  }

  // ---------------------------------------------------------------- lifecycle

  /**
   * Begins dispatching. Works from `initiated`, `stopped` and `halted` (clearing the halt: call it
   * once the cause is fixed); does nothing when already started; throws `InvalidStateError`
   * while pausing, paused or stopping.
   */
  start(): void {
    this.#drive.start();
  }

  /**
   * Stops starting jobs; running ones finish. Works from `idle` and `running`; does nothing when
   * already paused; throws `InvalidStateError` otherwise.
   */
  pause(): void {
    this.#drive.pause();
  }

  /** Undoes `pause()`. Does nothing when not paused but started; throws `InvalidStateError` otherwise. */
  resume(): void {
    this.#drive.resume();
  }

  /**
   * Stops starting jobs and resolves once the running ones have settled. Waiting jobs stay
   * queued and run after `start()`. Calling it on a stopped worker resolves at once.
   *
   * @example
   * ```ts
   * process.once('SIGINT', () => void worker.stop().then(() => process.exit(0)));
   * ```
   */
  stop(): Promise<void> {
    return this.#drive.stop();
  }

  /**
   * Resolves when nothing runs and nothing waits (delayed jobs count as waiting). While paused
   * or stopped with work left it keeps waiting. Rejects with the `InvariantError` if the worker
   * halts (or has halted).
   *
   * @example
   * ```ts
   * for (const file of files) queue.add(file);
   * await worker.waitUntilIdle();
   * ```
   */
  waitUntilIdle(): Promise<void> {
    return this.#drive.waitUntilIdle();
  }

  /**
   * Changes the number of slots. Raising it fills the new slots before the next macrotask;
   * lowering it never interrupts a running job, new starts just wait until in-flight is below.
   */
  setConcurrency(concurrency: number): void {
    const threads = this.#threads;
    this.#core.setConcurrency(
      threads === undefined
        ? check.positiveIntOrInfinity('setConcurrency(concurrency)', concurrency)
        : checkThreadCount('setConcurrency(concurrency)', concurrency),
    );
    threads?.setMaxThreads(concurrency);
    this.#drive.schedulePass();
  }

  /**
   * Cancels every running job whose handler has not returned (their signals abort with a
   * `CancelledError`): the registry's shutdown at its timeout.
   *
   * @internal
   */
  cancelRunning(reason: unknown): number {
    let cancelled = 0;
    for (const job of this.#runner.awaitedJobs()) if (this.#admission.cancel(job, reason)) cancelled++;
    return cancelled;
  }

  // ---------------------------------------------------------------- sources

  /**
   * Binds a FIFO queue.
   *
   * @example
   * ```ts
   * const alerts = worker.bindQueue({ priority: 1 });
   * const emails = worker.bindQueue(); // no priority: after every ranked source
   * const tenants = worker.bindQueue({ keys: { by: (job) => job.tenant } }); // a Queue<T, R, true>: key methods
   * ```
   */
  bindQueue(options: QueueBindOptions<T> & { keys: KeysOptions<T> }): Queue<T, R, true>;
  /** Binds a FIFO queue without `keys`: its key methods and the `key` add option fail to compile. */
  bindQueue(options?: QueueBindOptions<T> & { keys?: undefined }): Queue<T, R, false>;
  /** Binds a FIFO queue, keyed or not as `options.keys` says at run time. */
  bindQueue(options?: QueueBindOptions<T>): Queue<T, R>;
  bindQueue(options?: QueueBindOptions<T>): Queue<T, R> {
    return this.#bind('bindQueue()', 'queue', options, (name, order) => {
      const due = options?.keys === undefined ? new FifoDueJobs() : new KeyedJobs(checkKeysOptions(options.keys), undefined);
      return Queue.make<T, R>(this.#host, this.#core, due, name, order, options);
    });
  }

  /**
   * Binds a priority queue: its jobs start by their own priority number (`pq.add(data, 3)`).
   *
   * @example
   * ```ts
   * const reports = worker.bindPriorityQueue({ priority: 2 });
   * reports.add('weekly', 5);
   * reports.add('outage', 0); // runs first
   * ```
   */
  bindPriorityQueue(options: QueueBindOptions<T> & { keys: KeysOptions<T> }): PriorityQueue<T, R, true>;
  /** Binds a priority queue without `keys`: its key methods and the `key` add option fail to compile. */
  bindPriorityQueue(options?: QueueBindOptions<T> & { keys?: undefined }): PriorityQueue<T, R, false>;
  /** Binds a priority queue, keyed or not as `options.keys` says at run time. */
  bindPriorityQueue(options?: QueueBindOptions<T>): PriorityQueue<T, R>;
  bindPriorityQueue(options?: QueueBindOptions<T>): PriorityQueue<T, R> {
    return this.#bind('bindPriorityQueue()', 'priority-queue', options, (name, order) => {
      const due = options?.keys === undefined ? new PriorityDueJobs() : new KeyedJobs(checkKeysOptions(options.keys), () => new PriorityDueJobs());
      return PriorityQueue.make<T, R>(this.#host, this.#core, due, name, order, options);
    });
  }

  /**
   * Subscribes to a topic: every message published from now on becomes one job of this
   * subscription.
   *
   * @example
   * ```ts
   * const sub = worker.subscribe(orders, { priority: 3 });
   * sub.unsubscribe(); // later
   * ```
   */
  subscribe<U extends T>(topic: Topic<U>, options?: BindOptions): Subscription<T, R> {
    if (topic === null || typeof topic !== 'object' || typeof (topic as Topic<U> | null)?.attach !== 'function') {
      throw new TypeError(`qmux: subscribe(topic) needs a Topic, got ${check.describeValue(topic)}`);
    }
    const subscription = this.#bind('subscribe()', 'subscription', options, (name, order) => {
      return Subscription.make<T, R>(this.#host, this.#core, new FifoDueJobs(), name, order, options);
    });
    // The topic hands it messages of type U, which this worker's handler accepts (U extends T).
    const typed = topic as unknown as Topic<T>;
    subscription.topic = typed;
    typed.attach(subscription as Subscription<T, unknown>);
    return subscription;
  }

  /**
   * Binds a remote source (SPEC 9): jobs claimed from an engine that outlives the process, such
   * as a BullMQ queue (`BullMQSource` from `qmux/bullmq`), next to the local sources. Takes the
   * bind options of every source plus `prefetch`, the most jobs it holds claimed and not yet
   * started. Outcomes are recorded in the engine, which owns retries: the worker's `retry` and
   * dead letters do not apply.
   *
   * @example
   * ```ts
   * import { BullMQSource } from 'qmux/bullmq';
   * const emails = worker.bindRemote(new BullMQSource('emails', { connection: { host: '127.0.0.1', port: 6379 } }),
   *   { name: 'emails', weight: 3, concurrency: 4, prefetch: 4 });
   * ```
   */
  bindRemote(adapter: RemoteAdapter<T, R>, options?: RemoteBindOptions): RemoteSource<T, R> {
    const { bind, prefetch } = checkRemoteBind(adapter, options);
    const host = (this.#remoteHost ??= this.#makeRemoteHost());
    const typed = adapter;
    const source = this.#bind('bindRemote()', 'remote', bind, (name, order) => {
      return RemoteSource.make<T, R>(this.#host, this.#core, new FifoDueJobs(), name, order, bind, typed, prefetch, host);
    });
    bindAdapter(adapter, `worker "${this.name}", source "${source.name}"`);
    this.#remotes.add(source, this.#carriesContext);
    source.sync();
    return source;
  }

  #makeRemoteHost(): RemoteHost {
    const remotes = this.#remotes;
    return {
      admit: (job) => this.#admission.admitRemote(job, remotes.scopeOf(job.home as RemoteSource<T, R>)),
      wake: () => this.#drive.schedulePass(),
      report: (error) => reportFault(this, error, 'a remote source failed'),
      degraded: (error) => emitDegraded(this, error),
      closed: (source) => remotes.remove(source as RemoteSource<T, R>),
      recorded: () => this.#drive.react(),
    };
  }

  /** Checks the options, names the source and inserts it at its place in the list. */
  #bind<S extends Source<T, R>>(call: string, kind: string, options: QueueBindOptions<T> | undefined, make: (name: string, order: number) => S): S {
    checkBindOptions(call, options, kind !== 'subscription');
    const order = this.#bindCount++;
    const source = make(this.#core.claimName(options?.name, kind, order + 1, this.name), order);
    this.#core.bind(source as unknown as Source);
    return source;
  }
}

Object.defineProperty(WorkerImpl, 'name', { value: 'Worker' });

// The listener methods, declared again (types only, no code) so that they read as the worker's own,
// typed by WorkerEvents, in the API docs, which leave out eventemitter3's members (excludeExternals).
export interface WorkerImpl<in out T, R> {
  /**
   * Calls `listener` each time the worker emits `event`, with that event's arguments
   * ({@link WorkerEvents}). Returns the worker.
   *
   * @example
   * ```ts
   * worker.on('completed', (job, result) => console.log(job.id, result));
   * worker.on('failed', (job, error) => console.error(job.source, error));
   * ```
   */
  on<E extends keyof WorkerEvents<T, R>>(event: E, listener: (...args: WorkerEvents<T, R>[E]) => void, context?: unknown): this;
  /** Like {@link Worker.on}, for the next `event` only. */
  once<E extends keyof WorkerEvents<T, R>>(event: E, listener: (...args: WorkerEvents<T, R>[E]) => void, context?: unknown): this;
  /** Removes `listener` from `event`, or every listener of `event` without one. Returns the worker. */
  off<E extends keyof WorkerEvents<T, R>>(event: E, listener?: (...args: WorkerEvents<T, R>[E]) => void, context?: unknown, once?: boolean): this;
}

/**
 * How to make a {@link Worker}: with a handler, with a module for threads, or with options only
 * for a function worker, whose jobs are functions to call.
 */
export interface WorkerConstructor {
  /**
   * A worker that runs `handler` for each job: a function, or a module for threads. A threads
   * worker runs the default export `(data, ctx)` of the module at `handler` in worker threads
   * through tinypool. Give the module as a URL, made from your own module's URL so it does not
   * depend on the directory the process starts in:
   * `new Worker(new URL('../handler.js', import.meta.url))`. A string is a file path (or a `file:`
   * URL); a relative path resolves against `process.cwd()`, not against the calling module.
   *
   * (One signature for both, not two: a call with a handler and options then has one candidate,
   * so a misspelt option is reported as that option, not as the function not being a URL. The
   * threads-only options with a function handler throw at construction.)
   */
  new <T = unknown, R = unknown>(handler: Handler<T, R> | URL | string, options?: WorkerOptions | ThreadWorkerOptions): Worker<T, R>;
  /**
   * A function worker: each job's data is a function, which is called with its `Job`; its return value is the
   * job's result. `new Worker<R>(options)` makes a `Worker<Task<R>, R>`.
   */
  new <R = unknown>(options?: WorkerOptions): Worker<Task<R>, R>;
  /** The prototype every worker shares, so `worker instanceof Worker` works. */
  readonly prototype: Worker;
}

/**
 * One worker: a pool of slots, a list of bound sources and a strategy that picks which source
 * gives the next job.
 *
 * @typeParam T - job data
 * @typeParam R - what the handler returns
 */
export interface Worker<in out T = unknown, R = unknown> extends WorkerImpl<T, R> {}
/**
 * One worker: a pool of slots, a list of bound sources (queues, priority queues, topic
 * subscriptions) and a strategy that picks which source gives the next job whenever a slot is
 * free. Jobs run in async slots in the main thread, or in worker threads when the handler is a
 * module.
 *
 * A worker is an eventemitter3 `EventEmitter` typed by {@link WorkerEvents}: besides `on`,
 * `once` and `off` below it has eventemitter3's `addListener`, `removeListener`,
 * `removeAllListeners`, `listeners`, `listenerCount` and `eventNames`. In type positions write
 * `Worker<T, R>`.
 *
 * @example
 * ```ts
 * // A handler worker: two slots, round-robin over its sources.
 * const worker = new Worker(async (job: Job<string>) => fetch(job.data), {
 *   concurrency: 2,
 *   strategy: Strategy.RoundRobin,
 * });
 *
 * // A function worker (the p-limit use case).
 * const limit = new Worker<number>({ concurrency: 4 });
 * const q = limit.bindQueue();
 * const n = await q.add(() => computeSomething()).result();
 *
 * // A threads worker: the module's default export runs in worker threads.
 * const cpu = new Worker(new URL('../hash-handler.js', import.meta.url), { concurrency: 4 });
 * ```
 *
 * @typeParam T - job data
 * @typeParam R - what the handler returns
 * @class
 */
export const Worker = WorkerImpl as unknown as WorkerConstructor;
