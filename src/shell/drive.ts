import type { Clock } from './clock.js';
import type { Core } from '../core/core.js';
import { UNTIMED } from '../core/job-record.js';
import { Note } from '../core/outbox.js';
import { Phase } from '../core/worker-state.js';
import { type InvariantError, TimeoutError } from '../api/errors.js';
import { abortSignalOf, deliverOutcome, type JobRecord } from '../handles/job.js';
import type { ThreadPool } from '../pool/threads.js';
import type { RemoteJobRecord } from '../remote/remote-job.js';
import type { RemoteSource } from '../remote/remote-source.js';
import type { Source } from '../sources/source.js';
import { inRootContext } from './async-context.js';
import { emitCompleted, emitFailure, emitHalted, emitJob, emitRetrying, emitState } from './emit.js';
import { reportFault, type WorkerEmitter } from './faults.js';
import { runSoon } from './host.js';
import type { Remotes } from './remotes.js';
import type { AfterFinish, Runner } from './run.js';
import { WakeTimer } from './wake-timer.js';

interface Waiter {
  resolve(): void;
  reject(error: unknown): void;
}

/** The worker-wide events that no job causes, emitted from the root context (SPEC 13). */
const emitIdle = <T, R>(worker: WorkerEmitter<T, R>): void => emitState(worker, 'idle');
const emitStopped = <T, R>(worker: WorkerEmitter<T, R>): void => emitState(worker, 'stopped');

/**
 * The one loop of the shell (SPEC 12): it runs decision passes (time out what is past its
 * deadline, then start jobs while a slot is free), acts on every note the core records, in order
 * (start a handler, settle a promise, abort a signal, emit an event), settles what waits on the
 * worker's state (`stop()`, `waitUntilIdle()`, `idle`) and keeps the one timer armed for the
 * core's next deadline. The lifecycle calls go through it.
 *
 * One re-entrancy rule: notes recorded while notes are acted on (a listener or a synchronous
 * handler that calls back in) are acted on by the loop in progress, after the current one.
 *
 * @internal
 */
export class Drive<T, R> implements AfterFinish {
  /** Set when work arrives; cleared when `idle` is emitted. */
  busy = false;
  readonly #core: Core;
  readonly #clock: Clock;
  readonly #emitter: WorkerEmitter<T, R>;
  readonly #runner: Runner<T, R>;
  readonly #remotes: Remotes<T, R>;
  readonly #threads: ThreadPool | undefined;
  /** Whether jobs carry the async context of their add (the `asyncContext` option, SPEC 13). */
  readonly #carriesContext: boolean;
  readonly #timer: WakeTimer;
  readonly #passTask: () => void;
  readonly #promotionTask: () => void;
  #passScheduled = false;
  #promotionScheduled = false;
  /** Set while a decision pass starts jobs: a synchronous handler's finish leaves the rest to it. */
  #passing = false;
  /** Set while {@link react} runs: user code it calls that calls back in leaves the rest to it. */
  #reacting = false;
  /** Set while the core's notes are acted on, so the notes of user code that calls back in follow in order. */
  #actingOnNotes = false;
  /** The job whose finish is acting on the notes, in its own context already (see {@link finished}). */
  #inContextOf: JobRecord | undefined = undefined;
  /** Recoveries from a halt since the last macrotask (see {@link start}). */
  #recoveries = 0;
  readonly #endRecoveryTurn = (): void => {
    this.#recoveries = 0;
  };
  #idleWaiters: Waiter[] = [];
  #stopWaiters: Waiter[] = [];
  /** Counts `stop()` calls: a start() that a 'stopped' listener's stop() followed gives way to it. */
  #stopCalls = 0;
  /** Set while a stop waits for the remote sources to record their outcomes and close. */
  #quiescing: Promise<void> | undefined = undefined;

  constructor(
    core: Core,
    clock: Clock,
    emitter: WorkerEmitter<T, R>,
    runner: Runner<T, R>,
    remotes: Remotes<T, R>,
    threads: ThreadPool | undefined,
    carriesContext: boolean,
  ) {
    this.#core = core;
    this.#clock = clock;
    this.#emitter = emitter;
    this.#runner = runner;
    this.#remotes = remotes;
    this.#threads = threads;
    this.#carriesContext = carriesContext;
    this.#passTask = () => this.pass();
    this.#promotionTask = () => this.#promoteStep();
    this.#timer = new WakeTimer(this.#passTask);
    runner.after = this;
  }

  // ---------------------------------------------------------------- the lifecycle (SPEC 2)

  /** `worker.start()`. */
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
    else this.schedulePass();
    this.react();
  }

  /** `worker.pause()`. */
  pause(): void {
    if (this.#core.call('pause')) this.react();
  }

  /** `worker.resume()`. */
  resume(): void {
    if (!this.#core.call('resume')) return;
    this.schedulePass();
    this.react();
  }

  /** `worker.stop()`. */
  stop(): Promise<void> {
    this.#stopCalls++;
    const core = this.#core;
    if (core.phase === Phase.Stopped && core.slotsInUse === 0) return this.#quiescing ?? Promise.resolve();
    const promise = new Promise<void>((resolve, reject) => this.#stopWaiters.push({ resolve, reject }));
    core.call('stop');
    this.react();
    return promise;
  }

  /** `worker.waitUntilIdle()`. */
  waitUntilIdle(): Promise<void> {
    const core = this.#core;
    if (core.phase === Phase.Halted) return Promise.reject(core.haltError);
    if (core.slotsInUse === 0 && core.queued === 0 && !this.#remotes.recordingOutcomes()) return Promise.resolve();
    return new Promise<void>((resolve, reject) => this.#idleWaiters.push({ resolve, reject }));
  }

  /** Work arrived (an add): the worker is busy until its next `idle`, and a pass looks at it. */
  arrived(): void {
    this.busy = true;
    if (this.#core.phase === Phase.Started) this.schedulePass();
  }

  // ---------------------------------------------------------------- decision passes

  /** Batches every add of one synchronous run into one decision pass, as SPEC 4 asks. */
  schedulePass(): void {
    if (this.#passScheduled) return;
    this.#passScheduled = true;
    queueMicrotask(this.#passTask);
  }

  /**
   * One decision pass: time out the attempts past their deadline, then start jobs while a slot
   * is free and a source is eligible (each start's note acted on at once: `active`, then its
   * handler), then settle and arm the timer.
   */
  pass(): void {
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
        // Each start's notes are acted on at once: `active`, then its handler (a synchronous
        // one's finish, too). The loop is the one acting on notes until the starts end.
        const outer = this.#actingOnNotes;
        this.#actingOnNotes = true;
        try {
          while (core.next(now) !== undefined) {
            if (!outer) this.#takeNotes();
            if (core.slotsInUse < core.concurrency && core.needsClock) {
              now = this.#clock.now();
              core.promote(now);
            }
          }
        } finally {
          this.#actingOnNotes = outer;
        }
      }
    } catch (error) {
      this.#core.halt(error);
    } finally {
      this.#passing = false;
    }
    if (core.promotionContinues) this.#schedulePromotion();
    this.react();
  }

  /**
   * The core has decided a finished attempt's fate (see `Runner`): its notes are acted on now,
   * before anything the next pass starts, in the job's context: this runs in it already (a
   * synchronous handler's finish in the scope it was started in, an async one's in the reaction
   * to its promise, awaited in that scope).
   */
  finished(job: JobRecord): void {
    this.#inContextOf = job;
    this.#actOnNotes();
    this.#inContextOf = undefined;
    if (this.#passing) return; // a synchronous handler: the pass loop goes on by itself
    if (this.#core.phase === Phase.Started) this.pass();
    else this.react();
  }

  /** Due jobs are left to move in steps (see `Core.promote`): a step more on the next turn, then a pass. */
  #schedulePromotion(): void {
    if (this.#promotionScheduled) return;
    this.#promotionScheduled = true;
    runSoon(this.#promotionTask);
  }

  #promoteStep(): void {
    this.#promotionScheduled = false;
    const core = this.#core;
    if (!core.promotionContinues) return;
    core.promoteMore();
    if (core.phase === Phase.Started) this.pass();
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
      const delay = core.needsVerdict(job) ? this.#runner.retryVerdict(job, error) : -1;
      if (job.home.isRemote) (job.home as RemoteSource).judge(job as RemoteJobRecord, error);
      core.timeOut(deadline, error, delay, Date.now());
      this.#actOnNotes();
      expired = true;
    }
    return expired;
  }

  // ---------------------------------------------------------------- acting on the core's notes

  /**
   * Acts on everything the core recorded, then settles what waits on the worker's state and
   * arms the timer. User code it runs (listeners, signal handlers) may call back in: those calls
   * transition the core at once, and their notes are acted on here, in order.
   */
  react(): void {
    // Called back from user code while notes are acted on: whoever runs that loop settles after it.
    if (this.#reacting || this.#actingOnNotes) return;
    const core = this.#core;
    if (!core.outbox.pending) {
      // The common case (a job finished, nothing else happened): no loop, no try.
      if (this.#passing) return;
      this.#rearm();
      this.#afterChange();
      if (!core.outbox.pending) return;
    }
    this.#reacting = true;
    try {
      do {
        this.#actOnNotes();
        if (!this.#passing) {
          this.#rearm();
          this.#afterChange();
        }
      } while (this.#core.outbox.pending);
    } finally {
      this.#reacting = false;
    }
  }

  /**
   * Acts on the core's notes in order. A listener's (or a synchronous handler's) own calls into
   * the worker record more notes, acted on after it returns, in order.
   */
  #actOnNotes(): void {
    if (this.#actingOnNotes || !this.#core.outbox.pending) return;
    this.#actingOnNotes = true;
    try {
      this.#takeNotes();
    } finally {
      this.#actingOnNotes = false;
    }
  }

  #takeNotes(): void {
    const outbox = this.#core.outbox;
    while (outbox.pending) {
      const note = outbox.take();
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
    outbox.release();
  }

  /** A job's attempt started ({@link Note.Started}): `active`, then its handler. */
  #begin(job: JobRecord): void {
    emitJob(this.#emitter, 'active', job); // once the start is complete
    this.#runner.run(job);
  }

  /** A job succeeded ({@link Note.Succeeded}): its promise, then `completed`. */
  #complete(job: JobRecord): void {
    deliverOutcome(job);
    emitCompleted(this.#emitter, job, job.value as R);
    job.scope = undefined; // settled: it keeps no context alive
  }

  /** Acts on one of the core's other notes (see {@link Drive.#takeNotes}). */
  #actOn(note: Note, job: JobRecord, value: unknown, n: number): void {
    const emitter = this.#emitter;
    switch (note) {
      case Note.Retrying:
        emitRetrying(emitter, job, value, n);
        break;
      case Note.Failed:
        deliverOutcome(job);
        emitFailure(emitter, 'failed', job, value);
        if (n === 1) emitFailure(emitter, 'dead', job, value);
        job.scope = undefined; // settled: it keeps no context alive
        break;
      case Note.RemoteRetrying:
        deliverOutcome(job);
        emitRetrying(emitter, job, value, undefined);
        job.scope = undefined;
        break;
      case Note.Cancelled:
        deliverOutcome(job);
        // Settled before the abort: a listener of the signal that cancels again finds it settled.
        if (n === 1) this.#abortAttempt(job, job.value);
        else if (job.home.isRemote) (job.home as RemoteSource).release(job as RemoteJobRecord);
        emitJob(emitter, 'cancelled', job);
        job.scope = undefined;
        break;
      case Note.TimedOut:
        this.#abortAttempt(job, value);
        break;
      case Note.Shrunk:
        (value as Source).lengthDropped();
        break;
      case Note.Paused:
        emitState(emitter, 'paused');
        break;
      case Note.Resumed:
        emitState(emitter, 'resumed');
        break;
      case Note.Halted: {
        const waiters = this.#idleWaiters;
        this.#idleWaiters = [];
        for (const waiter of waiters) waiter.reject(value);
        emitHalted(emitter, value as InvariantError);
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
    remotes.sync();
    if (core.slotsInUse !== 0) return;
    this.#completeStop();
    if (core.queued !== 0) return;
    if (remotes.recordingOutcomes()) return; // RemoteHost.recorded comes back here
    if (this.busy && core.phase === Phase.Started) {
      this.busy = false;
      // Not in the context of the job whose end made the worker idle: it is no job's event.
      if (this.#carriesContext) inRootContext(emitIdle, this.#emitter);
      else emitState(this.#emitter, 'idle');
      // An 'idle' listener may have added work (and a synchronous handler may even have run it).
      if (core.slotsInUse !== 0 || core.queued !== 0) return;
      // Or stopped the worker: its own `react()` returns at once while this one acts on the notes
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
    const waiters = this.#stopWaiters;
    this.#stopWaiters = [];
    const quiet = this.#remotes.quiesce();
    if (quiet === undefined) this.#stopped(waiters);
    else {
      // Their outcomes recorded and their connections closed: only then is the worker stopped.
      const quiescing = quiet.then(() => {
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
    this.#threads?.destroy().catch((error: unknown) => reportFault(this.#emitter, error, 'releasing the threads failed'));
    if (this.#carriesContext) inRootContext(emitStopped, this.#emitter);
    else emitState(this.#emitter, 'stopped');
  }

  /** Keeps the one timer armed for the core's next deadline, and none when there is nothing to wait for. */
  #rearm(): void {
    const at = this.#core.wakeAt();
    if (at === Infinity) this.#timer.disarm();
    else this.#timer.arm(at, this.#clock);
  }
}
