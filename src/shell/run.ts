import type { Core } from '../core/core.js';
import { UNTIMED } from '../core/job-record.js';
import { isTimed } from '../core/sampling.js';
import { State } from '../core/job-record.js';
import type { Clock } from './clock.js';
import type { JobProgress } from '../api/jobs.js';
import { CrashWindow } from '../observe/health.js';
import type { WorkerTap } from '../internal/worker-tap.js';
import type { Job, JobRecord } from '../handles/job.js';
import { isThreadCrash } from '../pool/thread-errors.js';
import type { ThreadPool } from '../pool/threads.js';
import type { RemoteJobRecord } from '../remote/remote-job.js';
import type { RemoteSource } from '../remote/remote-source.js';
import type { RetryOptions } from '../api/retry.js';
import { askRetryHooks } from './retry.js';
import { Metrics } from '../observe/timings.js';
import type { Handler } from './worker-options.js';
import { Awaiter, isAwaitable } from './awaiter.js';
import { emitDegraded, emitProgress } from './emit.js';
import { reportFault, type WorkerEmitter } from './faults.js';

/**
 * Spare awaiters a worker keeps for the next jobs whose handlers return a promise: more than any
 * usual concurrency needs between two waves, and at most a few hundred KiB after a burst of
 * running jobs (a p-limit style worker at `concurrency: Infinity`, say).
 */
const FREE_AWAITERS_KEPT = 1024;

/** Told once the core has decided a finished attempt's fate (the drive acts on its notes). @internal */
export interface AfterFinish {
  finished(job: JobRecord): void;
}

/**
 * Runs handlers (SPEC 12's shell): calls the handler of a started job (in a slot, or through
 * the thread pool), awaits its promise with a reused awaiter, asks the user's retry hooks when
 * it fails, and hands the outcome to the core; then tells the drive, which acts on the notes.
 * Also the road of a handler's progress reports, and of the timings of a sampled attempt.
 *
 * @internal
 */
export class Runner<T, R> {
  /** An integration's hook into attempts (`qmux/otel`), or null: one check per attempt. */
  tap: WorkerTap | null = null;
  /** The timing histograms of the worker's sampled jobs. */
  readonly metrics = new Metrics();
  /** Recent thread crashes, for `degraded`. */
  readonly crashes = new CrashWindow();
  readonly #core: Core;
  readonly #clock: Clock;
  readonly #handler: Handler<T, R>;
  readonly #retry: RetryOptions | undefined;
  readonly #threads: ThreadPool | undefined;
  readonly #emitter: WorkerEmitter<T, R>;
  /** Every awaiter kept (busy or spare); the busy ones hold the jobs whose handlers returned a promise. */
  readonly #awaiters: Awaiter[] = [];
  readonly #freeAwaiters: Awaiter[] = [];
  readonly #awaited: (awaiter: Awaiter, ok: boolean, value: unknown) => void;
  readonly #onHookFault: (error: unknown) => void;
  #after: AfterFinish | undefined = undefined;

  constructor(
    core: Core,
    clock: Clock,
    handler: Handler<T, R>,
    retry: RetryOptions | undefined,
    threads: ThreadPool | undefined,
    emitter: WorkerEmitter<T, R>,
  ) {
    this.#core = core;
    this.#clock = clock;
    this.#handler = handler;
    this.#retry = retry;
    this.#threads = threads;
    this.#emitter = emitter;
    this.#onHookFault = (error) => reportFault(emitter, error, 'a retry hook (retryIf or backoff) threw');
    this.#awaited = (awaiter, ok, value) => {
      const job = awaiter.job;
      // Only a native promise's own reactions reach an awaiter, once each; this guards its reuse all the same.
      if (job === undefined) return;
      awaiter.job = undefined;
      if (this.#freeAwaiters.length < FREE_AWAITERS_KEPT) this.#freeAwaiters.push(awaiter);
      else this.#dropAwaiter(awaiter);
      this.#finish(job, ok, value, awaiter.startedAt);
    };
  }

  /** Who acts on the notes of a finish (the drive, which is made after the runner). */
  set after(after: AfterFinish) {
    this.#after = after;
  }

  /** Runs the handler of `job`, whose attempt the core has started (in the job's context, by the drive). */
  run(job: JobRecord): void {
    // A sampled attempt's start time is held by its awaiter or here, not on the job (see `Metrics`).
    let startedAt = UNTIMED;
    if (isTimed(job)) {
      startedAt = this.#clock.now();
      // A retry's add time was taken by its first attempt: no need to look for it.
      this.metrics.sampleStart(job, startedAt, job.attempts === 1 ? this.#core.takeAddTime(job) : undefined);
    }
    let result: unknown;
    try {
      const tap = this.tap;
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

  /** The jobs whose handler returned a promise that has not settled (the registry's shutdown cancels them). */
  *awaitedJobs(): Generator<JobRecord> {
    for (const awaiter of [...this.#awaiters]) if (awaiter.job !== undefined) yield awaiter.job;
  }

  /** The core's retry verdict on a failed attempt, once the user's hooks have answered (see `askRetryHooks`). */
  retryVerdict(job: JobRecord, error: unknown): number {
    return askRetryHooks(this.#retry, job, error, this.#onHookFault);
  }

  /**
   * Every progress report comes through here, from a handler in a slot (`job.updateProgress`)
   * or from a thread (`ctx.updateProgress`): the core records it if the job still runs, then the
   * `progress` event, then the job's source (a remote source forwards it to its adapter). A
   * value a remote source cannot store (SPEC 9: not JSON) is refused first: `atCall` (the
   * handler's own `job.updateProgress`) throws the `TypeError` there, as for any bad value; a
   * thread's report, which has no caller here to throw to, is reported and dropped.
   */
  progress(job: JobRecord, value: JobProgress, atCall: boolean): void {
    if (job.home.isRemote && job.state === State.Running) {
      const refused = (job.home as RemoteSource).refuseProgress(job, value);
      if (refused !== undefined) {
        if (atCall) throw refused;
        reportFault(this.#emitter, refused, 'a thread reported progress that its remote source cannot store');
        return;
      }
    }
    if (!this.#core.progress(job, value)) return;
    // A thread's report arrives in no job's context: the event is emitted in its job's.
    const scope = job.scope;
    if (scope === undefined) emitProgress(this.#emitter, job, value);
    else scope.runInAsyncScope(emitProgress, undefined, this.#emitter, job, value);
    job.home.progressed(job, value);
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
   * A handler settled: the user's retry hooks answer first, then the core decides the job's fate,
   * and the drive acts on what it decided. `startedAt` is when the attempt started if the job is
   * sampled, or `UNTIMED`.
   */
  #finish(job: JobRecord, ok: boolean, value: unknown, startedAt: number): void {
    const core = this.#core;
    // A sampled attempt's end is timed: that reading serves the transition too.
    const now = startedAt === UNTIMED ? UNTIMED : this.#clock.now();
    if (now !== UNTIMED) this.metrics.sampleEnd(job, startedAt, now);
    try {
      if (ok) core.succeed(job, value, now !== UNTIMED || !core.finishNeedsTime(job) ? now : this.#clock.now());
      else {
        let delay = -1;
        // A crash is the pool's health, whoever decides the retry (a remote job's engine, too).
        if (this.#threads !== undefined && isThreadCrash(value)) this.#noteCrash(value);
        if (core.needsVerdict(job)) {
          delay = this.retryVerdict(job, value);
        } else if (job.home.isRemote) (job.home as RemoteSource).judge(job as RemoteJobRecord, value);
        core.fail(job, value, delay, this.#clock.now(), Date.now());
      }
    } catch (invariantError) {
      core.halt(invariantError);
    }
    if (job.home.isRemote) (job.home as RemoteSource).attemptEnded(job as RemoteJobRecord);
    (this.#after as AfterFinish).finished(job);
  }

  /** Counts a thread crash; the one that makes the worker degraded emits `degraded`. */
  #noteCrash(error: unknown): void {
    if (this.crashes.note(error, this.#clock.now())) emitDegraded(this.#emitter, error);
  }
}
