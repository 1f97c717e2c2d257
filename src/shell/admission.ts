import type { AddOptions, ParsedAddOptions } from '../sources/add-options.js';
import type { Origin } from '../core/core.js';
import type { DeadLetter } from '../api/dead-letter.js';
import { JobIdInUseError } from '../api/errors.js';
import { describeValue } from '../internal/validate.js';
import { jobWithId } from '../core/job-ids.js';
import type { RetryOptions } from '../api/retry.js';
import { type Clock, WallClockOffset } from './clock.js';
import type { Core } from '../core/core.js';
import { UNTIMED } from '../core/job-record.js';
import { Timed } from '../core/sampling.js';
import type { WorkerTap } from '../internal/worker-tap.js';
import { followSignal } from '../handles/job-group.js';
import { type JobRecord, newJobRecord } from '../handles/job.js';
import type { RemoteJobRecord } from '../remote/remote-job.js';
import type { Source } from '../sources/source.js';
import { Sampler } from '../observe/timings.js';
import { captureContext, type ContextScope } from './async-context.js';
import type { Drive } from './drive.js';

/**
 * How jobs come in (SPEC 5): a new job record, its add options turned into a due time, the
 * clock read only when the core needs the time, the sampler's verdict, then one transition,
 * `core.admit`; a cancel and a purge go to the core too. The drive acts on the notes.
 *
 * @internal
 */
export class Admission<T, R> {
  /** An integration's hook into adds (`qmux/otel`), or null: one check per add. */
  tap: WorkerTap | null = null;
  readonly #core: Core;
  readonly #clock: Clock;
  readonly #drive: Drive<T, R>;
  /** Whether jobs carry the async context of their add (the `asyncContext` option, SPEC 13). */
  readonly #carriesContext: boolean;
  /** Converts `runAt` instants to the clock's scale (see `WallClockOffset`). */
  readonly #wallOffset = new WallClockOffset();
  /** Which jobs are timed (decided at add). */
  readonly #sampler = new Sampler();
  /** Set while a tick of adds (one synchronous run, see `Core.endAddTick`) waits for its end. */
  #tickEnding = false;
  readonly #endTick = (): void => {
    this.#tickEnding = false;
    this.#core.endAddTick();
  };

  constructor(core: Core, clock: Clock, drive: Drive<T, R>, carriesContext: boolean) {
    this.#core = core;
    this.#clock = clock;
    this.#drive = drive;
    this.#carriesContext = carriesContext;
  }

  /** A new job record of `source`, in the caller's context (SPEC 13). It joins nothing yet. */
  newJob<D, Q>(source: Source<D, Q>, data: D, priority: number, parsed: ParsedAddOptions | undefined, key?: string): JobRecord<D, Q> {
    const job = newJobRecord(source, data, priority, parsed, key);
    if (this.#carriesContext) job.scope = captureContext();
    if (this.tap !== null) this.tap.added(job as unknown as JobRecord);
    return job;
  }

  /** Adds one job (the source has checked its options and room). */
  add<D, Q>(source: Source<D, Q>, data: D, priority: number, parsed: ParsedAddOptions | undefined, key: string | undefined): JobRecord<D, Q> {
    const core = this.#core;
    const job = this.newJob(source, data, priority, parsed, key);
    let runAt: number | undefined;
    let now = UNTIMED;
    if (parsed !== undefined) {
      const signal = parsed.signal;
      if (signal?.aborted) {
        core.cancelAtAdd(job, signal.reason);
        this.#drive.react();
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
    if (core.admit(job, runAt, now, timing)) this.#endAddTickWithRun();
    if (parsed?.signal !== undefined) followSignal([job], parsed.signal);
    this.#drive.arrived();
    return job;
  }

  /** A job a remote source claimed joins it, in the context the source was bound in. */
  admitRemote(job: RemoteJobRecord, scope: ContextScope | undefined): void {
    job.scope = scope;
    const now = this.#clock.now();
    this.#sampler.saw(now);
    // A remote source holds no timed job: add order places it.
    if (this.#core.admit(job, undefined, now, this.#sampler.pick(job))) this.#endAddTickWithRun();
    this.#drive.arrived();
  }

  /**
   * A redrive whose predecessor's handler still runs (see `Core.park`): it waits, and joins its
   * source once that handler settles. Timed as any add is (its run, with its weight); its wait
   * is not: it joins later.
   */
  park(job: JobRecord, blocker: JobRecord): void {
    const now = this.#clock.now();
    this.#core.park(job, blocker, now);
    this.#sampler.saw(now);
    this.#core.timeParked(job, this.#sampler.pick(job));
    this.#drive.busy = true;
  }

  /**
   * `worker.redrive(entry)`: the dead letter's job added to its source again (see
   * `Worker.redrive`), or parked behind its predecessor's running handler.
   */
  redrive<D>(entry: DeadLetter<D>, worker: string): JobRecord<D, R> {
    const core = this.#core;
    const origin = core.deadLetters.originOf(entry) as Origin | undefined;
    if (origin === undefined) {
      throw new TypeError(`qmux: redrive(entry) needs an entry of worker "${worker}"'s deadLetters, got ${describeValue(entry)}`);
    }
    const source = origin.source as Source<D, R>;
    const dead = origin.job as JobRecord;
    const ext = dead.ext;
    const userId = ext?.id;
    if (userId !== undefined) {
      const holder = jobWithId(source as Source, userId);
      // The dead job itself may hold it still (its timed-out handler runs): the redrive takes it over.
      if (holder !== undefined && holder !== dead) throw new JobIdInUseError(userId, source.name, (holder as JobRecord).status);
    }
    const key = dead.key;
    const refused = source.refusal(1, key);
    if (refused !== undefined) throw refused;
    const options: AddOptions = {};
    if (userId !== undefined) options.id = userId;
    if (ext?.timeout !== undefined) options.timeout = ext.timeout;
    if (ext?.retry !== undefined) options.retry = ext.retry as RetryOptions;
    const parsed = source.parseOptions(options);
    let job: JobRecord<D, R>;
    if (dead.inFlight) {
      // Its last attempt timed out with the handler still running: the new job joins the source
      // only once that handler settles, so the job never has two attempts in flight (its key
      // stays active meanwhile, through that running attempt).
      job = this.newJob(source, entry.data, origin.priority, parsed, key);
      this.park(job, dead);
    } else {
      job = source.enqueue(entry.data, origin.priority, parsed, key); // asks keys.weight of a key that is not active
    }
    core.redriven(entry, job, userId === undefined ? entry.id : undefined);
    return job;
  }

  /** Cancels a job (its handle's `cancel`); false if it had already settled. */
  cancel(job: JobRecord, reason: unknown): boolean {
    if (!this.#core.cancel(job, reason)) return false;
    this.#drive.react();
    return true;
  }

  /** Removes every waiting job of `source`, or of one of its keys. */
  purge(source: Source, key?: string): number {
    const purged = this.#core.purge(source, key);
    this.#drive.react();
    return purged;
  }

  /**
   * The core noted the first job of a tick of adds (one synchronous run) in a FIFO source, for
   * the age of its oldest due job: the tick ends with the run, one microtask per tick, not per add.
   */
  #endAddTickWithRun(): void {
    if (this.#tickEnding) return;
    this.#tickEnding = true;
    queueMicrotask(this.#endTick);
  }
}
