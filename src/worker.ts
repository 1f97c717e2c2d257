import { EventEmitter } from 'eventemitter3';
import { Dispatcher } from './dispatcher.js';
import { CrashWindow, type WorkerHealth } from './health.js';
import { resolveWorkerConfig, type Handler, type Task, type ThreadWorkerOptions, type WorkerOptions } from './worker-options.js';
import { DeadLetterStore, type DeadLetter } from './dead-letters.js';
import { InvalidStateError, InvariantError, TimeoutError } from './errors.js';
import type { TrackedJob, WorkerEvents } from './events.js';
import { FifoDueJobs, PriorityDueJobs } from './internal/due-jobs.js';
import { setEntry } from './internal/entry.js';
import * as check from './internal/validate.js';
import { State, UNTIMED, type Job, type JobHandle, type JobRecord } from './job.js';
import { checkThreadCount, isThreadCrash, ThreadPool } from './pool/threads.js';
import { PriorityQueue } from './priority-queue.js';
import { Metrics, SAMPLE_EVERY, SAMPLE_MASK, type SourceStats, type WorkerStats } from './stats.js';
import { Queue } from './queue.js';
import { backoffDelay, mergeRetry, type RetryOptions } from './retry.js';
import type { AddOptions } from './add-options.js';
import { checkBindOptions, type BindOptions, type Source, type SourceHost } from './source.js';
import type { Strategy } from './strategies/index.js';
import { Subscription, type Topic } from './topic.js';

/**
 * A worker's status:
 *
 * | status | meaning |
 * |---|---|
 * | `initiated` | created with `autoRun: false`, never started |
 * | `idle` | started; nothing runs, nothing waits |
 * | `running` | started, with work (running or waiting, delayed included) |
 * | `pausing` | paused, jobs still running |
 * | `paused` | paused, nothing running |
 * | `stopping` | `stop()` called, jobs still running |
 * | `stopped` | stopped, nothing running |
 * | `halted` | fail-stopped on a broken invariant; `start()` recovers |
 */
export type WorkerStatus = 'initiated' | 'idle' | 'running' | 'pausing' | 'paused' | 'stopping' | 'stopped' | 'halted';

/** What the worker was told to do; with the slot count it gives the status. */
enum Phase {
  Initiated,
  Started,
  Paused,
  Stopped,
  Halted,
}

/** What `redrive` needs to put a dead letter back. */
interface Origin {
  job: JobRecord;
  source: Source;
  priority: number;
  timeout: number | undefined;
  retry: RetryOptions | undefined;
}

/** What a finished attempt leads to, so events can be emitted once the slot is released. */
const enum Outcome {
  None,
  Completed,
  Retrying,
  Failed,
}

export type { Handler, Task, ThreadWorkerOptions, WorkerOptions } from './worker-options.js';
export type { WorkerHealth, HealthyWorker, DegradedWorker, HaltedWorker } from './health.js';

let workerCount = 0;

interface Waiter {
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * Holds the promise callbacks of one running job. Slots are reused, so a job that returns a
 * promise costs no closure of its own.
 */
class Slot {
  job: JobRecord | undefined = undefined;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
  constructor(done: (slot: Slot, ok: boolean, value: unknown) => void) {
    this.resolve = (value) => done(this, true, value);
    this.reject = (error) => done(this, false, error);
  }
}

/**
 * Binds sources and runs their jobs, choosing the next one with its strategy whenever a slot is
 * free. The `Worker` value is this class; see {@link WorkerConstructor} for how to make one.
 * In your own code, write the type as {@link Worker | `Worker<T, R>`}: `WorkerImpl` is exported
 * (as a type only) so that its members can be documented.
 *
 * @typeParam T - job data
 * @typeParam R - what the handler returns
 */
export class WorkerImpl<in out T = unknown, R = unknown> extends EventEmitter<WorkerEvents<T, R>> {
  /** The worker's name. */
  readonly name: string;
  /** The strategy it was created with. */
  readonly strategy: Strategy;
  readonly #core: Dispatcher;
  readonly #handler: Handler<T, R>;
  readonly #host: SourceHost;
  readonly #names = new Set<string>();
  readonly #freeSlots: Slot[] = [];
  readonly #slotDone: (slot: Slot, ok: boolean, value: unknown) => void;
  readonly #pumpTask: () => void;
  readonly #onTimer: () => void;
  readonly #onJobTimeout: (job: JobRecord) => void;
  readonly #retry: RetryOptions | undefined;
  readonly #timeout: number | undefined;
  readonly #deadLetters: DeadLetterStore<T>;
  readonly #metrics = new Metrics();
  /** The thread pool of a threads worker. */
  readonly #threads: ThreadPool | undefined = undefined;
  /** Recent thread crashes, for `degraded`. */
  readonly #crashes = new CrashWindow();
  /** Every slot made so far; the busy ones hold the jobs whose handlers returned a promise. */
  readonly #slots: Slot[] = [];
  #phase = Phase.Initiated;
  #bindCount = 0;
  #pumpScheduled = false;
  #pumping = false;
  /** Set when work arrives; cleared when `idle` is emitted. */
  #busy = false;
  #timer: ReturnType<typeof setTimeout> | undefined = undefined;
  #timerAt = Infinity;
  #idleWaiters: Waiter[] = [];
  #stopWaiters: Waiter[] = [];
  #haltError: InvariantError | undefined = undefined;

  constructor(
    handlerOrOptions?: Handler<T, R> | URL | string | WorkerOptions,
    maybeOptions?: WorkerOptions | ThreadWorkerOptions,
  ) {
    super();
    const config = resolveWorkerConfig(handlerOrOptions, maybeOptions);
    const { concurrency, strategy, threadModule } = config;
    this.#retry = config.retry;
    this.#timeout = config.timeout;
    this.#deadLetters = new DeadLetterStore<T>(config.deadLetterLimit);
    let handler = config.handler as Handler<T, R> | undefined;
    if (threadModule !== undefined) {
      const threads = new ThreadPool(threadModule, concurrency, config.threadOptions, (error) => this.#reportFault(error, 'the thread pool failed'));
      this.#threads = threads;
      handler = (job) => threads.run(job as unknown as JobRecord, (job as unknown as JobRecord).ext?.transfer) as Promise<R>;
    }
    this.name = config.name ?? `worker-${++workerCount}`;
    this.strategy = strategy;
    this.#handler = handler as Handler<T, R>;
    this.#core = new Dispatcher(concurrency, config.picker, strategy.name);
    this.#setPhase(config.autoRun ? Phase.Started : Phase.Initiated);
    this.#host = {
      now: () => Date.now(),
      threads: threadModule !== undefined,
      jobCreated: () => void this.#metrics.counters.added++,
      jobAdded: () => this.#jobAdded(),
      jobCancelled: (job) => this.#jobCancelled(job),
      sourceUnbound: (source) => void this.#names.delete(source.name),
      abortRunning: (job, reason) => this.#threads?.abort(job, reason),
    };
    this.#slotDone = (slot, ok, value) => {
      const job = slot.job;
      // Only a native promise's own reactions reach a slot, once each; this guards its reuse all the same.
      if (job === undefined) return;
      slot.job = undefined;
      this.#freeSlots.push(slot);
      this.#finish(job, ok, value);
    };
    this.#pumpTask = () => this.#pump();
    this.#onTimer = () => {
      this.#timer = undefined;
      this.#timerAt = Infinity;
      this.#pump();
    };
    this.#onJobTimeout = (job) => this.#timedOut(job);
  }

  // ---------------------------------------------------------------- state

  /** Where the worker is in its lifecycle; see {@link WorkerStatus}. */
  get status(): WorkerStatus {
    const core = this.#core;
    switch (this.#phase) {
      case Phase.Initiated:
        return 'initiated';
      case Phase.Started:
        return core.inFlight > 0 || core.waiting > 0 ? 'running' : 'idle';
      case Phase.Paused:
        return core.inFlight > 0 ? 'pausing' : 'paused';
      case Phase.Stopped:
        return core.inFlight > 0 ? 'stopping' : 'stopped';
      case Phase.Halted:
        return 'halted';
    }
  }

  /** Most jobs running at once. Change it with {@link WorkerImpl.setConcurrency}. */
  get concurrency(): number {
    return this.#core.concurrency;
  }

  /** Jobs waiting in every source (not started yet), due or delayed. */
  get numPending(): number {
    return this.#core.waiting;
  }

  /** Slots in use: running jobs, including cancelled ones whose handler has not returned yet. */
  get numProcessing(): number {
    return this.#core.inFlight;
  }

  /**
   * Jobs that failed their last attempt, oldest first, at most `deadLetterLimit` of them.
   * Put one back with {@link WorkerImpl.redrive}.
   */
  get deadLetters(): readonly DeadLetter<T>[] {
    return this.#deadLetters.entries;
  }

  /**
   * Whether the worker can be trusted to make progress: `healthy`, `degraded` or `halted`
   * (with the reason and the error).
   */
  health(): WorkerHealth {
    if (this.#phase === Phase.Halted) {
      const error = this.#haltError as InvariantError;
      return { status: 'halted', reason: error.message, error, workerStatus: 'halted' };
    }
    const degraded = this.#crashes.degradedReason(Date.now());
    if (degraded !== undefined) {
      return { status: 'degraded', reason: degraded, error: this.#crashes.last, workerStatus: this.status };
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
    const perfNow = performance.now();
    const wallNow = Date.now();
    const core = this.#core;
    // A delayed job is due once its time has passed, whether or not a pump has run since
    // (every slot may be busy): count it where it belongs.
    core.promote(wallNow);
    const sources: Record<string, SourceStats> = {};
    let oldest: number | null = null;
    for (const source of core.list) {
      const age = source.oldestDueAgeMs(perfNow, wallNow);
      if (age !== null && (oldest === null || age > oldest)) oldest = age;
      setEntry(sources, source.name, {
        waiting: source.length,
        due: source.due.length,
        delayed: source.delayed.length,
        running: source.running,
        oldestDueAgeMs: age,
      });
    }
    return {
      name: this.name,
      status: this.status,
      concurrency: core.concurrency,
      running: core.inFlight,
      waiting: core.waiting,
      delayed: core.delayed,
      counters: { ...this.#metrics.counters },
      oldestDueAgeMs: oldest,
      sources,
      waitTime: this.#metrics.waitTime(),
      runTime: this.#metrics.runTime(),
      sampleEvery: SAMPLE_EVERY,
    };
  }

  /**
   * Takes a dead letter out of `deadLetters` and adds its job to its source again, with attempts
   * counted from 1 and the job's own `timeout` / `retry` options. Throws like `add` when the
   * source is full or closed (the entry then stays), and a `TypeError` for an entry that is not
   * one of this worker's.
   *
   * @example
   * ```ts
   * for (const entry of worker.deadLetters.filter((e) => isTransient(e.error))) worker.redrive(entry);
   * ```
   */
  redrive(entry: DeadLetter<T>): JobHandle<R> {
    const origin = this.#deadLetters.originOf(entry) as Origin | undefined;
    if (origin === undefined) {
      throw new TypeError(`qmux: redrive(entry) needs an entry of worker "${this.name}"'s deadLetters, got ${check.describeValue(entry)}`);
    }
    const refused = origin.source.refusal(1);
    if (refused !== undefined) throw refused;
    const options: AddOptions = { id: entry.id };
    if (origin.timeout !== undefined) options.timeout = origin.timeout;
    if (origin.retry !== undefined) options.retry = origin.retry;
    const source = origin.source as Source<T, R>;
    // Its last attempt may have timed out with the handler still running: then it joins the
    // source only once that handler settles, so the job never has two attempts in flight.
    const handle = origin.job.inFlight
      ? source.enqueueAfter(origin.job, entry.data, origin.priority, source.parseOptions(options))
      : source.enqueue(entry.data, origin.priority, source.parseOptions(options));
    this.#deadLetters.remove(entry);
    return handle;
  }

  // ---------------------------------------------------------------- lifecycle

  /**
   * Begins dispatching. Works from `initiated`, `stopped` and `halted` (clearing the halt: call it
   * once the cause is fixed); does nothing when already started; throws `InvalidStateError`
   * while pausing, paused or stopping.
   */
  start(): void {
    switch (this.#phase) {
      case Phase.Started:
        return;
      case Phase.Paused:
        throw new InvalidStateError('start', this.status, 'call resume() to undo pause()');
      case Phase.Stopped:
        if (this.#core.inFlight > 0) throw new InvalidStateError('start', 'stopping', 'await stop() first');
        break;
      default:
        break;
    }
    this.#haltError = undefined;
    this.#setPhase(Phase.Started);
    this.#schedulePump();
  }

  /**
   * Stops starting jobs; running ones finish. Works from `idle` and `running`; does nothing when
   * already paused; throws `InvalidStateError` otherwise.
   */
  pause(): void {
    if (this.#phase === Phase.Paused) return;
    if (this.#phase !== Phase.Started) {
      const hint =
        this.#phase === Phase.Initiated
          ? 'call start() first'
          : this.status === 'stopping'
            ? 'await stop(), then call start() to run again'
            : 'call start() to run again';
      throw new InvalidStateError('pause', this.status, hint);
    }
    this.#setPhase(Phase.Paused);
    this.#disarmTimer();
    this.#emit0('paused');
  }

  /** Undoes `pause()`. Does nothing when not paused but started; throws `InvalidStateError` otherwise. */
  resume(): void {
    if (this.#phase === Phase.Started) return;
    if (this.#phase !== Phase.Paused) {
      throw new InvalidStateError('resume', this.status, 'resume() undoes pause(); use start()');
    }
    this.#setPhase(Phase.Started);
    this.#emit0('resumed');
    this.#schedulePump();
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
    if (this.#phase === Phase.Stopped && this.#core.inFlight === 0) return Promise.resolve();
    const promise = new Promise<void>((resolve, reject) => this.#stopWaiters.push({ resolve, reject }));
    if (this.#phase !== Phase.Stopped) {
      this.#setPhase(Phase.Stopped);
      this.#haltError = undefined;
      this.#disarmTimer();
    }
    this.#afterChange();
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
    if (this.#phase === Phase.Halted) return Promise.reject(this.#haltError);
    if (this.#core.inFlight === 0 && this.#core.waiting === 0) return Promise.resolve();
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
    this.#schedulePump();
  }

  // ---------------------------------------------------------------- sources

  /**
   * Binds a FIFO queue.
   *
   * @example
   * ```ts
   * const alerts = worker.bindQueue({ priority: 1 });
   * const emails = worker.bindQueue(); // no priority: after every ranked source
   * ```
   */
  bindQueue(options?: BindOptions): Queue<T, R> {
    return this.#bind('bindQueue()', 'queue', options, (name, order) => {
      return new Queue<T, R>(this.#host, this.#core, new FifoDueJobs(), name, order, options);
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
  bindPriorityQueue(options?: BindOptions): PriorityQueue<T, R> {
    return this.#bind('bindPriorityQueue()', 'priority-queue', options, (name, order) => {
      return new PriorityQueue<T, R>(this.#host, this.#core, new PriorityDueJobs(), name, order, options);
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
      return new Subscription<T, R>(this.#host, this.#core, new FifoDueJobs(), name, order, options);
    });
    // The topic hands it messages of type U, which this worker's handler accepts (U extends T).
    const typed = topic as unknown as Topic<T>;
    subscription.topic = typed;
    typed.attach(subscription as Subscription<T, unknown>);
    return subscription;
  }

  /** Checks the options, names the source and inserts it at its place in the list. */
  #bind<S extends Source<T, R>>(call: string, kind: string, options: BindOptions | undefined, make: (name: string, order: number) => S): S {
    checkBindOptions(call, options);
    const source = make(this.#nameFor(options?.name, kind), this.#bindCount++);
    this.#core.bind(source as unknown as Source);
    return source;
  }

  // ---------------------------------------------------------------- internals

  #nameFor(requested: string | undefined, kind: string): string {
    let name = requested;
    if (name === undefined) {
      let n = this.#bindCount + 1;
      do name = `${kind}-${n++}`;
      while (this.#names.has(name));
    } else if (this.#names.has(name)) {
      throw new TypeError(`qmux: bind option "name": worker "${this.name}" already has a source named "${name}"`);
    }
    this.#names.add(name);
    return name;
  }

  #jobAdded(): void {
    this.#busy = true;
    if (this.#phase === Phase.Started) this.#schedulePump();
  }

  #jobCancelled(job: JobRecord): void {
    this.#metrics.counters.cancelled++;
    // The wake-up timer may have been armed for this very job: drop it if nothing else needs it,
    // so an idle worker keeps no timer (and the process can exit).
    if (this.#timer !== undefined && this.#core.wakeAt() === Infinity) this.#disarmTimer();
    this.#emit1('cancelled', job as unknown as TrackedJob<T, R>);
    if (!this.#pumping) this.#afterChange();
  }

  /** Batches every add of one synchronous run into one decision pass, as SPEC 4 asks. */
  #schedulePump(): void {
    if (this.#pumpScheduled) return;
    this.#pumpScheduled = true;
    queueMicrotask(this.#pumpTask);
  }

  /** Starts jobs while a slot is free and a source is eligible, then arms the wake-up timer. */
  #pump(): void {
    this.#pumpScheduled = false;
    if (this.#pumping) return; // the loop in progress will see whatever changed
    const core = this.#core;
    if (this.#phase === Phase.Started) {
      this.#pumping = true;
      // One clock reading per start: what is due, which rate windows are open, and the time a
      // start is recorded at are judged at the same instant. A synchronous handler may take a
      // while, so the clock is read again after each start (only while time matters at all).
      let now = core.needsClock ? Date.now() : 0;
      try {
        core.promote(now);
        while (core.inFlight < core.concurrency && this.#phase === Phase.Started) {
          const job = core.claim(now);
          if (job === undefined) break;
          this.#run(job);
          if (core.needsClock) {
            now = Date.now();
            core.promote(now);
          }
        }
        // A synchronous handler that failed may have scheduled the first delayed job (a retry):
        // the reading after its start covers it.
        if (this.#phase === Phase.Started && core.inFlight < core.concurrency) this.#armTimer(core.wakeAt(), now);
      } catch (error) {
        this.#halt(error);
      } finally {
        this.#pumping = false;
      }
    }
    this.#afterChange();
  }

  #run(job: JobRecord): void {
    this.#metrics.counters.started++;
    if ((job.seq & SAMPLE_MASK) === 0) this.#startSample(job);
    const timeout = job.ext?.timeout ?? this.#timeout;
    if (timeout !== undefined) job.extras().timer = setTimeout(this.#onJobTimeout, timeout, job);
    this.#emit1('active', job as unknown as TrackedJob<T, R>);
    let result: unknown;
    try {
      result = this.#handler(job as unknown as Job<T>);
      if (result !== null && (typeof result === 'object' || typeof result === 'function')) {
        if (result instanceof Promise || isThenable(result)) {
          // Exactly what `await result` does: Promise.resolve keeps a plain native promise and
          // adopts anything else (a subclass, a hand-written thenable) into one, and the native
          // then ignores any `then` of its own. A native promise settles once, so the callbacks
          // of a reused slot are called at most once, whatever the handler returned.
          const slot = this.#freeSlots.pop() ?? this.#newSlot();
          slot.job = job;
          nativeThen.call(Promise.resolve(result), slot.resolve, slot.reject);
          return;
        }
      }
    } catch (error) {
      this.#finish(job, false, error);
      return;
    }
    this.#finish(job, true, result);
  }

  #newSlot(): Slot {
    const slot = new Slot(this.#slotDone);
    this.#slots.push(slot);
    return slot;
  }

  /**
   * Times a sampled job's wait (first attempt) and marks the start of its run. Until a job
   * settles its `value` field is free, so a sampled job carries its add time and then its start
   * time there: no map, and no extra field on every job.
   */
  #startSample(job: JobRecord): void {
    const now = performance.now();
    const addedAt = job.value;
    if (typeof addedAt === 'number' && job.attempts === 1) {
      // Waiting starts when the job is due: at add, or at its due time for a delayed job.
      const dueFor = job.dueAt === UNTIMED ? now - addedAt : Math.min(now - addedAt, Date.now() - job.dueAt);
      this.#metrics.recordWait(Math.max(0, dueFor));
    }
    job.value = now;
    job.home.pruneSamples();
  }

  /** A handler settled: decide the job's fate, free its slot, then tell the listeners. */
  #finish(job: JobRecord, ok: boolean, value: unknown): void {
    const ext = job.ext;
    if ((job.seq & SAMPLE_MASK) === 0 && job.state === State.Running) {
      this.#metrics.recordRun(performance.now() - (job.value as number));
      job.value = undefined;
    }
    if (ext?.timer !== undefined) {
      clearTimeout(ext.timer);
      ext.timer = undefined;
    }
    let outcome = Outcome.None;
    let error: unknown;
    let delay = 0;
    if (job.state === State.Running) {
      // Still running as far as the handle knows: not cancelled, not failed by a timeout.
      if (ext !== undefined && ext.attemptFailed) {
        // A timeout already failed this attempt and chose to retry; now that the handler has
        // settled, the retry may be scheduled (a job never has two attempts in flight).
        error = ext.attemptError;
        delay = ext.retryDelay;
        outcome = Outcome.Retrying;
      } else if (ok) {
        job.settle(State.Succeeded, value);
        outcome = Outcome.Completed;
      } else {
        error = value;
        if (this.#threads !== undefined && isThreadCrash(error)) this.#noteCrash(error);
        delay = this.#retryDelay(job, error);
        // The retry hooks are user code: one may have cancelled the job (through its signal).
        if (job.state !== State.Running) outcome = Outcome.None;
        else if (delay >= 0) outcome = Outcome.Retrying;
        else {
          outcome = Outcome.Failed;
          this.#failForGood(job, error);
        }
      }
      if (outcome === Outcome.Retrying) job.home.requeue(job, Date.now() + delay);
    }
    try {
      this.#core.release(job);
    } catch (invariantError) {
      this.#halt(invariantError);
    }
    if (ext?.successor !== undefined) {
      job.home.admitHeld(ext.successor);
      ext.successor = undefined;
    }
    switch (outcome) {
      case Outcome.Completed:
        this.#metrics.counters.succeeded++;
        this.#emit2('completed', job, value);
        break;
      case Outcome.Retrying:
        this.#metrics.counters.retried++;
        this.#emit3('retrying', job, error, delay);
        break;
      case Outcome.Failed:
        this.#emitFailed(job, error);
        break;
      default:
        break;
    }
    if (this.#pumping) return; // a synchronous handler: the pump loop goes on by itself
    if (this.#phase === Phase.Started) this.#pump();
    else this.#afterChange();
  }

  /**
   * The wait before retrying `job` after `error`, or -1 to fail it for good: out of attempts,
   * `retryIf` said no, or a retry hook threw (reported on `error`).
   */
  #retryDelay(job: JobRecord, error: unknown): number {
    const policy = mergeRetry(this.#retry, job.ext?.retry as RetryOptions | undefined);
    if (policy === undefined || job.attempts >= (policy.attempts ?? 1)) return -1;
    // Its buffers were moved into the thread on the first attempt: a retry would see them empty.
    if (job.ext?.transfer !== undefined && job.ext.transfer.length > 0) return -1;
    try {
      if (policy.retryIf !== undefined && !policy.retryIf(error, job.attempts)) return -1;
      return backoffDelay(policy.backoff, job.attempts, error, Math.random);
    } catch (hookError) {
      this.#reportFault(hookError, 'a retry hook (retryIf or backoff) threw');
      return -1;
    }
  }

  /** Counts a thread crash; the one that makes the worker degraded emits `degraded`. */
  #noteCrash(error: unknown): void {
    if (this.#crashes.note(error, Date.now())) this.#emit1('degraded', error);
  }

  /** Settles a job `'failed'` and keeps it as a dead letter; events are the caller's. */
  #failForGood(job: JobRecord, error: unknown): void {
    job.settle(State.Failed, error);
    const origin: Origin = {
      job,
      source: job.home,
      priority: job.priority,
      timeout: job.ext?.timeout,
      retry: job.ext?.retry as RetryOptions | undefined,
    };
    this.#deadLetters.add(
      { id: job.id, data: job.data as T, source: job.home.name, error, attempts: job.attempts, failedAt: new Date() },
      origin,
    );
  }

  #emitFailed(job: JobRecord, error: unknown): void {
    const counters = this.#metrics.counters;
    counters.failed++;
    this.#emit2('failed', job, error);
    if (this.#deadLetters.keeps) {
      counters.dead++;
      this.#emit2('dead', job, error);
    }
  }

  /** An attempt ran past its timeout: abort its signal and fail it now; the slot stays taken. */
  #timedOut(job: JobRecord): void {
    const ext = job.extras();
    ext.timer = undefined;
    if (job.state !== State.Running || !job.inFlight) return;
    const error = new TimeoutError(ext.timeout ?? (this.#timeout as number), job.id);
    // The job's fate is decided (and a final failure settled) before its signal aborts: a
    // listener of that signal may cancel the job, and must find it already failed, or (when a
    // retry is due) still running, in which case the cancel wins and no retry follows.
    const delay = this.#retryDelay(job, error);
    if (job.state !== State.Running) return; // a retry hook cancelled it: that settled it
    if (delay >= 0) {
      ext.attemptFailed = true;
      ext.attemptError = error;
      ext.retryDelay = delay;
      job.abortAttempt(error);
    } else {
      this.#failForGood(job, error);
      job.abortAttempt(error);
      this.#emitFailed(job, error);
    }
  }

  /**
   * Cancels every running job whose handler has not returned (their signals abort with a
   * `CancelledError`): the registry's shutdown at its timeout.
   *
   * @internal
   */
  cancelRunning(reason: unknown): number {
    let cancelled = 0;
    for (const slot of this.#slots) {
      const job = slot.job;
      if (job !== undefined && job.cancel(reason)) cancelled++;
    }
    return cancelled;
  }

  /** Settles what waits on the worker's state: `stop()`, `waitUntilIdle()`, the `idle` event. */
  #afterChange(): void {
    const core = this.#core;
    if (core.inFlight !== 0) return;
    if (this.#phase === Phase.Stopped && this.#stopWaiters.length > 0) {
      const waiters = this.#stopWaiters;
      this.#stopWaiters = [];
      for (const waiter of waiters) waiter.resolve();
      // A stopped worker holds no thread; start() makes a new pool when jobs run again.
      this.#threads?.destroy().catch((error: unknown) => this.#reportFault(error, 'releasing the threads failed'));
      this.#emit0('stopped');
    }
    if (core.waiting !== 0) return;
    if (this.#busy && this.#phase === Phase.Started) {
      this.#busy = false;
      this.#emit0('idle');
      // An 'idle' listener may have added work (and a synchronous handler may even have run it).
      if (core.inFlight !== 0 || core.waiting !== 0) return;
    }
    if (this.#idleWaiters.length > 0) {
      const waiters = this.#idleWaiters;
      this.#idleWaiters = [];
      for (const waiter of waiters) waiter.resolve();
    }
  }

  #armTimer(at: number, now: number): void {
    if (at === Infinity) {
      this.#disarmTimer();
      return;
    }
    if (this.#timer !== undefined) {
      if (this.#timerAt <= at) return; // it fires first; that pump re-arms for the rest
      clearTimeout(this.#timer);
    }
    // A due time further away than a timer can wait (runAt next year) is reached in steps: the
    // timer fires early, the pump finds nothing due and arms the next step.
    const wait = Math.min(check.MAX_TIMER_MS, Math.max(1, at - now));
    this.#timerAt = now + wait;
    this.#timer = setTimeout(this.#onTimer, wait);
  }

  #disarmTimer(): void {
    if (this.#timer === undefined) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#timerAt = Infinity;
  }

  /**
   * Changes the phase, and tells the core whether jobs may start: a strategy's pick is user code
   * that may pause or stop the worker, and the start it was picking for must not happen then.
   */
  #setPhase(phase: Phase): void {
    this.#phase = phase;
    this.#core.open = phase === Phase.Started;
  }

  /** Fail-stop: claim nothing more, keep every waiting job, tell whoever waits. */
  #halt(cause: unknown): void {
    if (this.#phase === Phase.Halted) return;
    const error =
      cause instanceof InvariantError
        ? cause
        : new InvariantError('internal', `unexpected error inside qmux: ${String(cause)}`, { cause });
    this.#setPhase(Phase.Halted);
    this.#haltError = error;
    this.#disarmTimer();
    const waiters = this.#idleWaiters;
    this.#idleWaiters = [];
    for (const waiter of waiters) waiter.reject(error);
    this.#emit1('halted', error);
  }

  // Fixed-arity emitters: no rest array per event on the hot path, and a listener that throws
  // cannot corrupt the worker's state.
  #emit0(event: 'idle' | 'paused' | 'resumed' | 'stopped'): void {
    try {
      (this.emit as (event: string) => boolean)(event);
    } catch (error) {
      this.#listenerThrew(event, error);
    }
  }

  #emit1(event: 'active' | 'cancelled' | 'halted' | 'degraded' | 'error', a: unknown): void {
    try {
      (this.emit as (event: string, a: unknown) => boolean)(event, a);
    } catch (error) {
      this.#listenerThrew(event, error);
    }
  }

  #emit2(event: 'completed' | 'failed' | 'dead', a: unknown, b: unknown): void {
    try {
      (this.emit as (event: string, a: unknown, b: unknown) => boolean)(event, a, b);
    } catch (error) {
      this.#listenerThrew(event, error);
    }
  }

  #emit3(event: 'retrying', a: unknown, b: unknown, c: unknown): void {
    try {
      (this.emit as (event: string, a: unknown, b: unknown, c: unknown) => boolean)(event, a, b, c);
    } catch (error) {
      this.#listenerThrew(event, error);
    }
  }

  /** A listener threw: the worker carries on, and the error is reported. */
  #listenerThrew(event: string, error: unknown): void {
    if (event === 'error') this.#warn(error, 'a listener of the "error" event threw');
    else this.#reportFault(error, `a listener of the "${event}" event threw`);
  }

  /**
   * A fault that is neither a job's failure nor a broken invariant: emitted on `error` when
   * someone listens there, else a process warning. Never dropped, and never an uncaught
   * exception: qmux is a guest in the host process.
   */
  #reportFault(error: unknown, what: string): void {
    if (this.listenerCount('error') > 0) this.#emit1('error', error);
    else this.#warn(error, what);
  }

  #warn(error: unknown, what: string): void {
    // A message, not the Error itself: given an Error, Node ignores `type` and `detail`.
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    const stack = error instanceof Error && error.stack !== undefined ? `\n${error.stack}` : '';
    process.emitWarning(message, {
      type: 'QmuxWarning',
      detail: `worker "${this.name}": ${what}; listen to its "error" event to handle this.${stack}`,
    });
  }


}

Object.defineProperty(WorkerImpl, 'name', { value: 'Worker' });

/**
 * How to make a {@link Worker}: with a handler, or with options only for a function worker,
 * whose jobs are functions to call.
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
 * ```
 */
export interface WorkerConstructor {
  /** A worker that runs `handler` for each job. */
  new <T = unknown, R = unknown>(handler: Handler<T, R>, options?: WorkerOptions): WorkerImpl<T, R>;
  /** A function worker: each job's data is a function, which is called; its return value is the job's result. */
  new <R = unknown>(options?: WorkerOptions): WorkerImpl<Task<R>, R>;
  /**
   * A threads worker: runs the default export `(data, ctx)` of the module at `handler` (a URL or a
   * file path) in worker threads through tinypool.
   */
  new <T = unknown, R = unknown>(handler: URL | string, options?: ThreadWorkerOptions): WorkerImpl<T, R>;
  /** The prototype every worker shares, so `worker instanceof Worker` works. */
  readonly prototype: WorkerImpl;
}

/**
 * One worker: a pool of slots, a list of bound sources and a strategy that picks which source
 * gives the next job. See {@link WorkerConstructor} for the constructor.
 *
 * @typeParam T - job data
 * @typeParam R - what the handler returns
 */
export type Worker<T = unknown, R = unknown> = WorkerImpl<T, R>;
/** The worker class; see {@link WorkerConstructor}. */
export const Worker = WorkerImpl as unknown as WorkerConstructor;

const nativeThen = Promise.prototype.then;

/** Whether `value` has a callable `then` (a `then` getter that throws fails the job: the caller catches). */
function isThenable(value: object): value is PromiseLike<unknown> {
  return typeof (value as PromiseLike<unknown>).then === 'function';
}
