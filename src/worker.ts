import { EventEmitter } from 'eventemitter3';
import type { AddOptions, ParsedAddOptions } from './add-options.js';
import { monotonicClock, WallClockOffset, type Clock } from './clock.js';
import { Core, type Origin } from './core/core.js';
import { KeyedJobs } from './core/keys/keyed-jobs.js';
import { Note } from './core/outbox.js';
import { Phase, type WorkerStatus } from './core/worker-state.js';
import type { DeadLetter } from './dead-letters.js';
import { JobIdInUseError, TimeoutError, type InvariantError } from './errors.js';
import type { WorkerEvents } from './events.js';
import { CrashWindow, type WorkerHealth } from './health.js';
import { FifoDueJobs, PriorityDueJobs } from './internal/due-jobs.js';
import * as check from './internal/validate.js';
import { followSignal } from './job-group.js';
import { jobWithId } from './job-ids.js';
import { checkKeysOptions, type KeysOptions } from './keys.js';
import { abortSignalOf, deliverOutcome, newJobRecord, type Job, type JobHandle, type JobProgress, type JobRecord } from './job.js';
import { State, UNTIMED } from './core/job-record.js';
import { ThreadPool } from './pool/threads.js';
import { isThreadCrash } from './pool/thread-errors.js';
import { checkThreadCount } from './pool/thread-options.js';
import { PriorityQueue } from './priority-queue.js';
import { Queue } from './queue.js';
import type { RemoteAdapter, RemoteBindOptions } from './remote/adapter.js';
import { bindAdapter, checkRemoteBind } from './remote/bind.js';
import type { RemoteJobRecord } from './remote/remote-job.js';
import { RemoteSource, type RemoteHost } from './remote/remote-source.js';
import { askRetryHooks, type RetryOptions } from './retry.js';
import { checkBindOptions, type BindOptions, type QueueBindOptions, type Source, type SourceHost } from './source.js';
import { Metrics, Sampler, snapshot, type WorkerStats } from './stats.js';
import { isTimed } from './core/sampling.js';
import { Timed } from './core/sampling.js';
import type { Strategy } from './strategies/index.js';
import { captureContext, inRootContext, type ContextScope } from './shell/async-context.js';
import { Awaiter, isAwaitable } from './shell/awaiter.js';
import { emitCompleted, emitDegraded, emitFailure, emitHalted, emitJob, emitProgress, emitRetrying, emitState } from './shell/emit.js';
import { reportFault, type WorkerEmitter } from './shell/faults.js';
import { ExitWatch, watchExit, workerNameInUse } from './shell/exit-warning.js';
import { runSoon } from './shell/host.js';
import { WakeTimer } from './shell/wake-timer.js';
import type { WorkerTap } from './internal/worker-tap.js';
import { Subscription, type Topic } from './topic.js';
import { resolveWorkerConfig, type Handler, type Task, type ThreadWorkerOptions, type WorkerOptions } from './worker-options.js';

export type { WorkerStatus } from './core/worker-state.js';
export type { Handler, Task, ThreadWorkerOptions, WorkerOptions } from './worker-options.js';
export type { WorkerHealth, HealthyWorker, DegradedWorker, HaltedWorker } from './health.js';

let workerCount = 0;

/** Sets a worker's tap (see {@link tapWorker}); assigned by the class's static block, which can reach `#tap`. */
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

/**
 * Spare awaiters a worker keeps for the next jobs whose handlers return a promise: more than any
 * usual concurrency needs between two waves, and at most a few hundred KiB after a burst of
 * running jobs (a p-limit style worker at `concurrency: Infinity`, say).
 */
const FREE_AWAITERS_KEPT = 1024;

/** A worker name no live worker has: `worker-<n>`, skipping names users gave. */
function generatedName(): string {
  let name: string;
  do name = `worker-${++workerCount}`;
  while (workerNameInUse(name));
  return name;
}

interface Waiter {
  resolve(): void;
  reject(error: unknown): void;
}

/** The worker-wide events that no job causes, emitted from the root context (SPEC 13). */
const emitIdle = <T, R>(worker: WorkerEmitter<T, R>): void => emitState(worker, 'idle');
const emitStopped = <T, R>(worker: WorkerEmitter<T, R>): void => emitState(worker, 'stopped');

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
  /** Converts `runAt` instants to the clock's scale (see `WallClockOffset`). */
  readonly #wallOffset = new WallClockOffset();
  readonly #handler: Handler<T, R>;
  readonly #host: SourceHost;
  readonly #freeAwaiters: Awaiter[] = [];
  readonly #awaited: (awaiter: Awaiter, ok: boolean, value: unknown) => void;
  readonly #passTask: () => void;
  readonly #retry: RetryOptions | undefined;
  readonly #metrics = new Metrics();
  /** Which jobs are timed (decided at add). */
  readonly #sampler = new Sampler();
  /** The thread pool of a threads worker. */
  readonly #threads: ThreadPool | undefined = undefined;
  /** Recent thread crashes, for `degraded`. */
  readonly #crashes = new CrashWindow();
  /** Every awaiter kept (busy or spare); the busy ones hold the jobs whose handlers returned a promise. */
  readonly #awaiters: Awaiter[] = [];
  #bindCount = 0;
  #passScheduled = false;
  /** Set while a batch of adds (one synchronous run, see `Core.endAddBatch`) waits for its end. */
  #batchEnding = false;
  readonly #endBatch = (): void => {
    this.#batchEnding = false;
    this.#core.endAddBatch();
  };
  readonly #promotionTask: () => void;
  #promotionScheduled = false;
  /** Set while a decision pass starts jobs: a synchronous handler's finish leaves the rest to it. */
  #passing = false;
  /** Set while {@link WorkerImpl.#settle} runs: user code it calls that calls back in leaves the rest to it. */
  #settling = false;
  /** Set while the core's notes are acted on, so the notes of user code that calls back in follow in order. */
  #draining = false;
  /** The job whose finish is acting on the notes, in its own context already (see {@link WorkerImpl.#finish}). */
  #inContextOf: JobRecord | undefined = undefined;
  /** Recoveries from a halt since the last macrotask (see `start`). */
  #recoveries = 0;
  readonly #onHookFault = (error: unknown): void => reportFault(this, error, 'a retry hook (retryIf or backoff) threw');
  readonly #endRecoveryTurn = (): void => {
    this.#recoveries = 0;
  };
  /** Set when work arrives; cleared when `idle` is emitted. */
  #busy = false;
  readonly #timer: WakeTimer;
  #idleWaiters: Waiter[] = [];
  #stopWaiters: Waiter[] = [];
  /** Counts `stop()` calls: a start() that a 'stopped' listener's stop() followed gives way to it. */
  #stopCalls = 0;
  /** What the process's one `beforeExit` listener asks about this worker (see `shell/exit-warning.ts`). */
  readonly #exitWatch = new ExitWatch();
  /** The bound remote sources (SPEC 9), once there is one. */
  #remotes: RemoteSource<T, R>[] | undefined = undefined;
  #remoteHost: RemoteHost | undefined = undefined;
  /** Set while a stop waits for the remote sources to record their outcomes and close. */
  #quiescing: Promise<void> | undefined = undefined;
  /** Whether jobs carry the async context of their add (the `asyncContext` option, SPEC 13). */
  readonly #carriesContext: boolean;
  /** The context each remote source was bound in: its jobs run in it (SPEC 13). */
  #remoteScopes: Map<RemoteSource<T, R>, ContextScope | undefined> | undefined = undefined;
  /** An integration's hook into adds and attempts (`qmux/otel`), or null: one check per add and per attempt. */
  #tap: WorkerTap | null = null;

  static {
    setTap = (worker, tap) => {
      const previous = worker.#tap;
      worker.#tap = tap;
      return previous;
    };
  }

  constructor(handlerOrOptions?: Handler<T, R> | URL | string | WorkerOptions, maybeOptions?: WorkerOptions | ThreadWorkerOptions) {
    super();
    const config = resolveWorkerConfig(handlerOrOptions, maybeOptions);
    const { concurrency, strategy, threadModule } = config;
    this.#retry = config.retry;
    this.#carriesContext = config.asyncContext;
    let handler = config.handler as Handler<T, R> | undefined;
    if (threadModule !== undefined) {
      const threads = new ThreadPool(
        threadModule,
        concurrency,
        config.threadOptions,
        (error) => reportFault(this, error, 'the thread pool failed'),
        (job, value) => this.#progress(job, value, false),
      );
      this.#threads = threads;
      handler = (job) => threads.run(job as unknown as JobRecord, (job as unknown as JobRecord).ext?.transfer) as Promise<R>;
    }
    this.name = config.name ?? generatedName();
    this.strategy = strategy;
    this.#handler = handler as Handler<T, R>;
    this.#core = new Core({
      concurrency,
      picker: config.picker,
      strategyName: strategy.name,
      timeout: config.timeout,
      deadLetterLimit: config.deadLetterLimit,
      autoRun: config.autoRun,
      workClock: this.#clock,
    });
    this.#host = {
      clock: this.#clock,
      threads: threadModule !== undefined,
      functions: config.functionWorker,
      add: (source, data, priority, parsed, key) => this.#add(source, data, priority, parsed, key),
      cancel: (job, reason) => this.#cancel(job, reason),
      purge: (source, key) => this.#purge(source, key),
      wake: () => {
        if (this.#core.phase === Phase.Started) this.#schedulePass();
      },
      progress: (job, value) => this.#progress(job, value, true),
      retire: (source) => {
        this.#core.retire(source);
        this.#settle();
      },
    };
    this.#awaited = (awaiter, ok, value) => {
      const job = awaiter.job;
      // Only a native promise's own reactions reach an awaiter, once each; this guards its reuse all the same.
      if (job === undefined) return;
      awaiter.job = undefined;
      if (this.#freeAwaiters.length < FREE_AWAITERS_KEPT) this.#freeAwaiters.push(awaiter);
      else this.#dropAwaiter(awaiter);
      this.#finish(job, ok, value, awaiter.startedAt);
    };
    this.#passTask = () => this.#pass();
    this.#promotionTask = () => this.#promoteBatch();
    this.#timer = new WakeTimer(this.#passTask);
    watchExit(this.#exitWatch, this.name, this.#core);
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
    return this.#core.waiting;
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
    const degraded = this.#crashes.degradedReason(this.#clock.now());
    if (degraded !== undefined) {
      return { status: 'degraded', reason: degraded, error: this.#crashes.last, workerStatus: this.status };
    }
    const remote = this.#remotes?.find((source) => source.outage.down);
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
    if (core.delayed > 0 || core.dispatcher.timedKeys.length > 0) this.#schedulePass();
    return snapshot(this.name, core, this.#metrics, now);
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
    const core = this.#core;
    const origin = core.deadLetters.originOf(entry) as Origin | undefined;
    if (origin === undefined) {
      throw new TypeError(`qmux: redrive(entry) needs an entry of worker "${this.name}"'s deadLetters, got ${check.describeValue(entry)}`);
    }
    const source = origin.source as Source<T, R>;
    const ext = origin.job.ext;
    const userId = ext?.id;
    if (userId !== undefined) {
      const holder = jobWithId(source as Source, userId);
      // The dead job itself may hold it still (its timed-out handler runs): the redrive takes it over.
      if (holder !== undefined && holder !== origin.job) throw new JobIdInUseError(userId, source.name, (holder as JobRecord).status);
    }
    const key = origin.job.key;
    const refused = source.refusal(1, key);
    if (refused !== undefined) throw refused;
    const options: AddOptions = {};
    if (userId !== undefined) options.id = userId;
    if (ext?.timeout !== undefined) options.timeout = ext.timeout;
    if (ext?.retry !== undefined) options.retry = ext.retry as RetryOptions;
    const parsed = source.parseOptions(options);
    let job: JobRecord<T, R>;
    if (origin.job.inFlight) {
      // Its last attempt timed out with the handler still running: the new job joins the source
      // only once that handler settles, so the job never has two attempts in flight (its key
      // stays active meanwhile, through that running attempt).
      job = this.#newJob(source, entry.data, origin.priority, parsed, key);
      const now = this.#clock.now();
      core.hold(job, origin.job, now);
      // Timed as any add is (its run, with its weight); its wait is not: it joins later.
      this.#sampler.saw(now);
      core.timeHeld(job, this.#sampler.pick(job));
      this.#busy = true;
    } else {
      job = source.enqueue(entry.data, origin.priority, parsed, key); // asks keys.weight of a key that is not active
    }
    // A generated id stays the job's id, and is never looked up.
    if (userId === undefined) job.extras().keptId = entry.id;
    core.deadLetters.remove(entry);
    return job;
  }

  // ---------------------------------------------------------------- lifecycle

  /**
   * Begins dispatching. Works from `initiated`, `stopped` and `halted` (clearing the halt: call it
   * once the cause is fixed); does nothing when already started; throws `InvalidStateError`
   * while pausing, paused or stopping.
   */
  start(): void {
    const core = this.#core;
    const recovering = core.phase === Phase.Halted;
    // A stop that is complete but not acted on yet (stop() then start() from a listener, whose
    // settling waits for the outer one): it resolves now, before the phase leaves Stopped. If a
    // 'stopped' listener stops the worker again, that later call stands.
    if (core.phase === Phase.Stopped && core.slotsInUse === 0 && this.#stopWaiters.length > 0) {
      const stops = this.#stopCalls;
      this.#completeStop();
      if (this.#stopCalls !== stops) return;
    }
    if (!core.call('start')) return;
    // A 'halted' listener that restarts a worker whose strategy keeps throwing must not spin
    // halt, start, pass in microtasks forever: a second recovery in one macrotask waits for the
    // next one, so timers and I/O always get their turn.
    if (recovering && this.#recoveries++ === 0) runSoon(this.#endRecoveryTurn);
    if (recovering && this.#recoveries > 1) runSoon(this.#passTask);
    else this.#schedulePass();
    this.#settle();
  }

  /**
   * Stops starting jobs; running ones finish. Works from `idle` and `running`; does nothing when
   * already paused; throws `InvalidStateError` otherwise.
   */
  pause(): void {
    if (this.#core.call('pause')) this.#settle();
  }

  /** Undoes `pause()`. Does nothing when not paused but started; throws `InvalidStateError` otherwise. */
  resume(): void {
    if (!this.#core.call('resume')) return;
    this.#schedulePass();
    this.#settle();
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
    this.#stopCalls++;
    const core = this.#core;
    if (core.phase === Phase.Stopped && core.slotsInUse === 0) return this.#quiescing ?? Promise.resolve();
    const promise = new Promise<void>((resolve, reject) => this.#stopWaiters.push({ resolve, reject }));
    core.call('stop');
    this.#settle();
    return promise;
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
    const core = this.#core;
    if (core.phase === Phase.Halted) return Promise.reject(core.haltError);
    if (core.slotsInUse === 0 && core.waiting === 0 && !this.#recordingOutcomes()) return Promise.resolve();
    return new Promise<void>((resolve, reject) => this.#idleWaiters.push({ resolve, reject }));
  }

  /**
   * Changes the number of slots. Raising it fills the new slots before the next macrotask;
   * lowering it never interrupts a running job, new starts just wait until in-flight is below.
   */
  setConcurrency(concurrency: number): void {
    const threads = this.#threads;
    this.#core.concurrency =
      threads === undefined
        ? check.positiveIntOrInfinity('setConcurrency(concurrency)', concurrency)
        : checkThreadCount('setConcurrency(concurrency)', concurrency);
    threads?.setMaxThreads(concurrency);
    this.#schedulePass();
  }

  /**
   * Cancels every running job whose handler has not returned (their signals abort with a
   * `CancelledError`): the registry's shutdown at its timeout.
   *
   * @internal
   */
  cancelRunning(reason: unknown): number {
    let cancelled = 0;
    for (const awaiter of this.#awaiters) {
      const job = awaiter.job;
      if (job !== undefined && this.#cancel(job, reason)) cancelled++;
    }
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
    (this.#remotes ??= []).push(source);
    bindAdapter(adapter, `worker "${this.name}", source "${source.name}"`);
    (this.#remoteScopes ??= new Map()).set(source, this.#carriesContext ? captureContext() : undefined);
    source.sync();
    return source;
  }

  #makeRemoteHost(): RemoteHost {
    return {
      admit: (job) => {
        const core = this.#core;
        job.scope = this.#remoteScopes?.get(job.home as RemoteSource<T, R>);
        const now = this.#clock.now();
        this.#sampler.saw(now);
        // A remote source holds no timed job: add order places it.
        if (core.admit(job, undefined, now, this.#sampler.pick(job))) this.#endAddBatchWithRun();
        this.#busy = true;
        if (core.phase === Phase.Started) this.#schedulePass();
      },
      wake: () => this.#schedulePass(),
      report: (error) => reportFault(this, error, 'a remote source failed'),
      degraded: (error) => emitDegraded(this, error),
      closed: (source) => {
        const remotes = this.#remotes as RemoteSource<T, R>[];
        const at = remotes.indexOf(source as RemoteSource<T, R>);
        if (at >= 0) remotes.splice(at, 1);
        this.#remoteScopes?.delete(source as RemoteSource<T, R>);
      },
      recorded: () => this.#settle(),
    };
  }

  /** Whether a remote source is still recording an outcome: the worker is not idle until it has (SPEC 9). */
  #recordingOutcomes(): boolean {
    const remotes = this.#remotes;
    if (remotes === undefined) return false;
    for (const source of remotes) if (source.recordingOutcomes) return true;
    return false;
  }

  /** Lets every remote source claim or hand back as the worker's state now asks. */
  #syncRemotes(remotes: RemoteSource<T, R>[]): void {
    // In the context each was bound in: a claim started here may wait long after the job whose
    // finish called this has settled, and must neither keep that job's context alive nor carry it.
    for (const source of remotes) {
      const scope = this.#remoteScopes?.get(source);
      if (scope === undefined) source.sync();
      else scope.runInAsyncScope(source.sync, source);
    }
  }

  /** Checks the options, names the source and inserts it at its place in the list. */
  #bind<S extends Source<T, R>>(call: string, kind: string, options: QueueBindOptions<T> | undefined, make: (name: string, order: number) => S): S {
    checkBindOptions(call, options, kind !== 'subscription');
    const name = this.#nameFor(options?.name, kind);
    const source = make(name, this.#bindCount++);
    this.#core.bind(source as unknown as Source);
    return source;
  }

  #nameFor(requested: string | undefined, kind: string): string {
    const core = this.#core;
    let name = requested;
    if (name === undefined) {
      let n = this.#bindCount + 1;
      do name = `${kind}-${n++}`;
      while (core.names.has(name));
    }
    core.claimName(name, this.name);
    return name;
  }

  // ---------------------------------------------------------------- jobs: adding, cancelling

  #newJob<D, Q>(source: Source<D, Q>, data: D, priority: number, parsed: ParsedAddOptions | undefined, key?: string): JobRecord<D, Q> {
    const job = newJobRecord(source, data, priority, parsed, key);
    if (this.#carriesContext) job.scope = captureContext();
    if (this.#tap !== null) this.#tap.added(job as unknown as JobRecord);
    return job;
  }

  /** Adds one job (the source has checked its options and room). */
  #add<D, Q>(source: Source<D, Q>, data: D, priority: number, parsed: ParsedAddOptions | undefined, key: string | undefined): JobRecord<D, Q> {
    const core = this.#core;
    const job = this.#newJob(source, data, priority, parsed, key);
    let runAt: number | undefined;
    let now = UNTIMED;
    if (parsed !== undefined) {
      const signal = parsed.signal;
      if (signal?.aborted) {
        core.cancelAtAdd(job, signal.reason);
        this.#settle();
        return job;
      }
      if (parsed.delay !== undefined) runAt = (now = this.#clock.now()) + parsed.delay;
      else if (parsed.runAt !== undefined) {
        runAt = this.#wallOffset.at(parsed.runAt, this.#clock);
        now = this.#wallOffset.now;
      }
    }
    // The clock is read only when something needs it (see `Core.admitNeedsTime`).
    if (now === UNTIMED && core.admitNeedsTime(source, false)) now = this.#clock.now();
    // A reading taken anyway may open a new second of timing in full, for this job already.
    if (now !== UNTIMED) this.#sampler.saw(now);
    const timing = this.#sampler.pick(job);
    if (timing !== Timed.No && now === UNTIMED) this.#sampler.saw((now = this.#clock.now()));
    if (core.admit(job, runAt, now, timing)) this.#endAddBatchWithRun();
    if (parsed?.signal !== undefined) followSignal([job], parsed.signal);
    this.#busy = true;
    if (core.phase === Phase.Started) this.#schedulePass();
    return job;
  }

  /**
   * Every progress report comes through here, from a handler in a slot (`job.updateProgress`)
   * or from a thread (`ctx.updateProgress`): the core records it if the job still runs, then the
   * `progress` event, then the job's source (a remote source forwards it to its adapter). A
   * value a remote source cannot store (SPEC 9: not JSON) is refused first: `atCall` (the
   * handler's own `job.updateProgress`) throws the `TypeError` there, as for any bad value; a
   * thread's report, which has no caller here to throw to, is reported and dropped.
   */
  #progress(job: JobRecord, value: JobProgress, atCall: boolean): void {
    if (job.home.isRemote && job.state === State.Running) {
      const refused = (job.home as RemoteSource).refuseProgress(job, value);
      if (refused !== undefined) {
        if (atCall) throw refused;
        reportFault(this, refused, 'a thread reported progress that its remote source cannot store');
        return;
      }
    }
    if (!this.#core.progress(job, value)) return;
    // A thread's report arrives in no job's context: the event is emitted in its job's.
    const scope = job.scope;
    if (scope === undefined) emitProgress(this, job, value);
    else scope.runInAsyncScope(emitProgress, undefined, this, job, value);
    job.home.progressed(job, value);
  }

  #cancel(job: JobRecord, reason: unknown): boolean {
    if (!this.#core.cancel(job, reason)) return false;
    this.#settle();
    return true;
  }

  #purge(source: Source, key?: string): number {
    const purged = this.#core.purge(source, key);
    this.#settle();
    return purged;
  }

  // ---------------------------------------------------------------- decision passes

  /**
   * The core noted the first job of a batch of adds (one synchronous run) in a FIFO source, for
   * the age of its oldest due job: the batch ends with the run, one microtask per batch, not per add.
   */
  #endAddBatchWithRun(): void {
    if (this.#batchEnding) return;
    this.#batchEnding = true;
    queueMicrotask(this.#endBatch);
  }

  /** Batches every add of one synchronous run into one decision pass, as SPEC 4 asks. */
  #schedulePass(): void {
    if (this.#passScheduled) return;
    this.#passScheduled = true;
    queueMicrotask(this.#passTask);
  }

  /**
   * One decision pass: time out the attempts past their deadline, then start jobs while a slot
   * is free and a source is eligible, then act on what the core decided and arm the timer.
   */
  #pass(): void {
    this.#passScheduled = false;
    if (this.#passing) return; // the pass in progress will see whatever changed
    const core = this.#core;
    this.#passing = true;
    try {
      // One clock reading per start: what is due, which rate windows are open, and the time a
      // start is recorded at are judged at the same instant. A synchronous handler may take a
      // while, so the clock is read again after each start, while time matters at all and a
      // slot is free for another (with every slot busy the next start waits for a finish, and
      // the pass that finish runs reads the clock itself).
      let now = core.needsClock ? this.#clock.now() : UNTIMED;
      // A timeout runs user code (retry hooks, `failed` and abort listeners) that may take a
      // while: what starts next is judged, and its deadline and rate window dated, after it
      // (only then is the clock read again, off the hot path).
      if (core.deadlines.length > 0 && this.#expire(now) && core.needsClock) now = this.#clock.now();
      if (core.phase === Phase.Started) {
        core.promote(now);
        while (core.next(now) !== undefined) {
          // Its Started note: `active`, then its handler (a synchronous one's finish, too).
          this.#drain();
          if (core.slotsInUse < core.concurrency && core.needsClock) {
            now = this.#clock.now();
            core.promote(now);
          }
        }
      }
    } catch (error) {
      this.#core.halt(error);
    } finally {
      this.#passing = false;
    }
    if (core.promotionContinues) this.#schedulePromotion();
    this.#settle();
  }

  /** Due jobs are left to move in batches (see `Core.promote`): a batch more on the next turn, then a pass. */
  #schedulePromotion(): void {
    if (this.#promotionScheduled) return;
    this.#promotionScheduled = true;
    runSoon(this.#promotionTask);
  }

  #promoteBatch(): void {
    this.#promotionScheduled = false;
    const core = this.#core;
    if (!core.promotionContinues) return;
    core.promoteMore();
    if (core.phase === Phase.Started) this.#pass();
    else if (core.promotionContinues) this.#schedulePromotion();
  }

  /** Times out every attempt whose deadline has passed at `now`; returns whether any did (user code ran). */
  #expire(now: number): boolean {
    const core = this.#core;
    let expired = false;
    for (let deadline = core.deadlines.expired(now); deadline !== undefined; deadline = core.deadlines.expired(now)) {
      const job = deadline.job as JobRecord;
      const error = new TimeoutError(deadline.ms, job.id);
      // The retry hooks are user code: they run before the transition and hand their answer in.
      const delay = core.needsVerdict(job) ? this.#retryVerdict(job, error) : -1;
      if (job.home.isRemote) (job.home as RemoteSource).judge(job as RemoteJobRecord, error);
      core.timeOut(deadline, error, delay, Date.now());
      this.#drain();
      expired = true;
    }
    return expired;
  }

  #run(job: JobRecord): void {
    // A sampled attempt's start time is held by its awaiter or here, not on the job (see `Metrics`).
    let startedAt = UNTIMED;
    if (isTimed(job)) {
      startedAt = this.#clock.now();
      // A retry's add time was taken by its first attempt: no need to look for it.
      this.#metrics.sampleStart(job, startedAt, job.attempts === 1 ? this.#core.takeAddTime(job) : undefined);
    }
    let result: unknown;
    try {
      const tap = this.#tap;
      result = tap === null ? this.#handler(job as unknown as Job<T>) : tap.run(job, this.#handler as (job: never) => unknown);
      if (isAwaitable(result)) {
        const awaiter = this.#freeAwaiters.pop() ?? this.#newAwaiter();
        awaiter.startedAt = startedAt;
        awaiter.await(job, result);
        return;
      }
    } catch (error) {
      this.#finish(job, false, error, startedAt);
      return;
    }
    this.#finish(job, true, result, startedAt);
  }

  #newAwaiter(): Awaiter {
    const awaiter = new Awaiter(this.#awaited);
    awaiter.at = this.#awaiters.length;
    this.#awaiters.push(awaiter);
    return awaiter;
  }

  /** Lets go of an awaiter beyond the spares kept: memory follows the jobs running, not their peak. */
  #dropAwaiter(awaiter: Awaiter): void {
    const awaiters = this.#awaiters;
    const last = awaiters.pop() as Awaiter;
    if (last !== awaiter) {
      awaiters[awaiter.at] = last;
      last.at = awaiter.at;
    }
  }

  /**
   * A handler settled: the user's retry hooks answer first, then the core decides the job's fate.
   * `startedAt` is when the attempt started if the job is sampled, or `UNTIMED`.
   */
  #finish(job: JobRecord, ok: boolean, value: unknown, startedAt: number): void {
    const core = this.#core;
    if (startedAt !== UNTIMED) this.#metrics.sampleEnd(job, startedAt, this.#clock.now());
    try {
      if (ok) core.succeed(job, value, core.finishNeedsTime(job) ? this.#clock.now() : UNTIMED);
      else {
        let delay = -1;
        // A crash is the pool's health, whoever decides the retry (a remote job's engine, too).
        if (this.#threads !== undefined && isThreadCrash(value)) this.#noteCrash(value);
        if (core.needsVerdict(job)) {
          delay = this.#retryVerdict(job, value);
        } else if (job.home.isRemote) (job.home as RemoteSource).judge(job as RemoteJobRecord, value);
        core.fail(job, value, delay, this.#clock.now(), Date.now());
      }
    } catch (invariantError) {
      core.halt(invariantError);
    }
    if (job.home.isRemote) (job.home as RemoteSource).attemptEnded(job as RemoteJobRecord);
    // The events of this finish come before anything the next pass starts, in the job's context:
    // this runs in it already (a synchronous handler's finish in the scope it was started in,
    // an async one's in the reaction to its promise, awaited in that scope).
    this.#inContextOf = job;
    this.#drain();
    this.#inContextOf = undefined;
    if (this.#passing) return; // a synchronous handler: the pass loop goes on by itself
    if (core.phase === Phase.Started) this.#pass();
    else this.#settle();
  }

  /** The core's retry verdict on a failed attempt, once the user's hooks have answered (see `askRetryHooks`). */
  #retryVerdict(job: JobRecord, error: unknown): number {
    return askRetryHooks(this.#retry, job, error, this.#onHookFault);
  }

  /** Counts a thread crash; the one that makes the worker degraded emits `degraded`. */
  #noteCrash(error: unknown): void {
    if (this.#crashes.note(error, this.#clock.now())) emitDegraded(this, error);
  }

  // ---------------------------------------------------------------- acting on the core's notes

  /**
   * Acts on everything the core recorded, then settles what waits on the worker's state and
   * arms the timer. User code it runs (listeners, signal handlers) may call back in: those calls
   * transition the core at once, and their notes are acted on here, in order.
   */
  #settle(): void {
    // Called back from user code while notes are acted on: whoever runs that loop settles after it.
    if (this.#settling || this.#draining) return;
    const core = this.#core;
    if (!core.outbox.pending) {
      // The common case (a job finished, nothing else happened): no loop, no try.
      if (this.#passing) return;
      this.#rearm();
      this.#afterChange();
      if (!core.outbox.pending) return;
    }
    this.#settling = true;
    try {
      do {
        this.#drain();
        if (!this.#passing) {
          this.#rearm();
          this.#afterChange();
        }
      } while (this.#core.outbox.pending);
    } finally {
      this.#settling = false;
    }
  }

  /**
   * Acts on the core's notes in order: settles promises, aborts signals, emits events. A
   * listener's own calls into the worker record more notes, acted on after it returns, in order.
   */
  #drain(): void {
    if (this.#draining || !this.#core.outbox.pending) return;
    this.#draining = true;
    try {
      this.#drainNotes();
    } finally {
      this.#draining = false;
    }
  }

  #drainNotes(): void {
    const outbox = this.#core.outbox;
    for (let note = outbox.next(); note !== -1; note = outbox.next()) {
      const job = outbox.job as JobRecord; // every job of a worker is its handle
      // A job's notes are acted on in its context (SPEC 13): its handler, its events, its
      // signal's abort (entered unless a finish in that context is what acts on them). The hot
      // path's two notes come first, with what they need only.
      if (note === Note.Started) {
        const scope = job.scope;
        if (scope === undefined) this.#begin(job);
        else scope.runInAsyncScope(this.#begin, this, job);
      } else if (note === Note.Succeeded) {
        const scope = job !== this.#inContextOf ? job.scope : undefined;
        if (scope === undefined) this.#complete(job);
        else scope.runInAsyncScope(this.#complete, this, job);
      } else {
        const value = outbox.value;
        const n = outbox.n;
        const scope = note <= Note.TimedOut && job !== this.#inContextOf ? job.scope : undefined;
        if (scope === undefined) this.#actOn(note, job, value, n);
        else scope.runInAsyncScope(this.#actOn, this, note, job, value, n);
      }
    }
  }

  /** A job's attempt started ({@link Note.Started}): `active`, then its handler. */
  #begin(job: JobRecord): void {
    emitJob(this, 'active', job); // once the start is complete
    this.#run(job);
  }

  /** A job succeeded ({@link Note.Succeeded}): its promise, then `completed`. */
  #complete(job: JobRecord): void {
    deliverOutcome(job);
    emitCompleted(this, job, job.value as R);
    job.scope = undefined; // settled: it keeps no context alive
  }

  /** Acts on one of the core's notes (see {@link WorkerImpl.#drainNotes}). */
  #actOn(note: Note, job: JobRecord, value: unknown, n: number): void {
    switch (note) {
      case Note.Retrying:
        emitRetrying(this, job, value, n);
        break;
      case Note.Failed:
        deliverOutcome(job);
        emitFailure(this, 'failed', job, value);
        if (n === 1) emitFailure(this, 'dead', job, value);
        job.scope = undefined; // settled: it keeps no context alive
        break;
      case Note.RemoteRetrying:
        deliverOutcome(job);
        emitRetrying(this, job, value, undefined);
        job.scope = undefined;
        break;
      case Note.Cancelled:
        deliverOutcome(job);
        // Settled before the abort: a listener of the signal that cancels again finds it settled.
        if (n === 1) this.#abortAttempt(job, job.value);
        else if (job.home.isRemote) (job.home as RemoteSource).release(job as RemoteJobRecord);
        emitJob(this, 'cancelled', job);
        job.scope = undefined;
        break;
      case Note.TimedOut:
        this.#abortAttempt(job, value);
        break;
      case Note.Shrunk:
        (value as Source).lengthDropped();
        break;
      case Note.Paused:
        emitState(this, 'paused');
        break;
      case Note.Resumed:
        emitState(this, 'resumed');
        break;
      case Note.Halted: {
        const waiters = this.#idleWaiters;
        this.#idleWaiters = [];
        for (const waiter of waiters) waiter.reject(value);
        emitHalted(this, value as InvariantError);
        break;
      }
    }
  }

  /** Aborts a running attempt: its signal, and the thread that runs it. */
  #abortAttempt(job: JobRecord, reason: unknown): void {
    abortSignalOf(job, reason);
    this.#threads?.abort(job, reason);
  }

  /** Settles what waits on the worker's state: `stop()`, `waitUntilIdle()`, the `idle` event. */
  #afterChange(): void {
    const core = this.#core;
    const remotes = this.#remotes;
    if (remotes !== undefined) this.#syncRemotes(remotes);
    if (core.slotsInUse !== 0) return;
    this.#completeStop();
    if (core.waiting !== 0) return;
    if (remotes !== undefined && this.#recordingOutcomes()) return; // RemoteHost.recorded comes back here
    if (this.#busy && core.phase === Phase.Started) {
      this.#busy = false;
      // Not in the context of the job whose end made the worker idle: it is no job's event.
      if (this.#carriesContext) inRootContext(emitIdle, this);
      else emitState(this, 'idle');
      // An 'idle' listener may have added work (and a synchronous handler may even have run it).
      if (core.slotsInUse !== 0 || core.waiting !== 0) return;
      // Or stopped the worker: its own settle returns at once while this one acts on the notes
      // (a cancel, a purge), so the stop is completed here.
      this.#completeStop();
    }
    if (this.#idleWaiters.length > 0) {
      const waiters = this.#idleWaiters;
      this.#idleWaiters = [];
      for (const waiter of waiters) waiter.resolve();
    }
  }

  /** With nothing running: a `stop()` in progress is complete once its remote sources are quiet. */
  #completeStop(): void {
    if (this.#core.phase !== Phase.Stopped || this.#stopWaiters.length === 0) return;
    const remotes = this.#remotes;
    const waiters = this.#stopWaiters;
    this.#stopWaiters = [];
    if (remotes === undefined || remotes.length === 0) this.#stopped(waiters);
    else {
      // Their outcomes recorded and their connections closed: only then is the worker stopped.
      const quiescing = Promise.all(remotes.map((source) => source.quiesce())).then(() => {
        const latest = this.#quiescing === quiescing;
        if (latest) this.#quiescing = undefined;
        // Started again meanwhile (and maybe stopping again, with jobs running, or waiting for
        // the sources again): this stop is over, but it is not the one that stops the worker.
        if (latest && this.#core.phase === Phase.Stopped && this.#core.slotsInUse === 0) this.#stopped(waiters);
        else for (const waiter of waiters) waiter.resolve();
      });
      this.#quiescing = quiescing;
    }
  }

  /** `stop()` is complete: resolve its callers, let the threads go, emit `stopped`. */
  #stopped(waiters: Waiter[]): void {
    for (const waiter of waiters) waiter.resolve();
    // A stopped worker holds no thread; start() makes a new pool when jobs run again.
    this.#threads?.destroy().catch((error: unknown) => reportFault(this, error, 'releasing the threads failed'));
    if (this.#carriesContext) inRootContext(emitStopped, this);
    else emitState(this, 'stopped');
  }

  /** Keeps the one timer armed for the core's next deadline, and none when there is nothing to wait for. */
  #rearm(): void {
    const at = this.#core.wakeAt();
    if (at === Infinity) this.#timer.disarm();
    else this.#timer.arm(at, this.#clock);
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
   * `new Worker(new URL('./handler.js', import.meta.url))`. A string is a file path (or a `file:`
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
 * const cpu = new Worker(new URL('./hash-handler.js', import.meta.url), { concurrency: 4 });
 * ```
 *
 * @typeParam T - job data
 * @typeParam R - what the handler returns
 * @class
 */
export const Worker = WorkerImpl as unknown as WorkerConstructor;
