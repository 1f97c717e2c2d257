import type { ThreadTransferable } from '../api/transferable.js';
import type { JobProgress, JobStatus } from '../api/jobs.js';
import type { WorkerCounters } from '../api/stats.js';
import type { HeapPlaced } from './due/heap.js';

/** Internal job states; numbers keep the hot path's comparisons cheap. @internal */
export enum State {
  /** Due, waiting in its lane's due order (its status is `'waiting'`). */
  Due = 0,
  Delayed = 1,
  Running = 2,
  Succeeded = 3,
  Failed = 4,
  Cancelled = 5,
}

/** The status each {@link State} shows. @internal */
export const STATUS: readonly JobStatus[] = ['waiting', 'delayed', 'running', 'succeeded', 'failed', 'cancelled'];

/**
 * The `dueAt` of a job that was due on add while its source held no timed job: it sorts before
 * every timed job, which is right because it was added before any of them. A small negative
 * integer, not -Infinity, because a small integer is stored in the job itself while a double
 * would be boxed; below zero, because the monotonic clock may read 0 (a virtual one does).
 *
 * @internal
 */
export const UNTIMED = -1;

/**
 * Told once when a job settles, after its own promises (see `JobExtras.watcher`): how a batch of
 * jobs is followed without a promise per job.
 *
 * @internal
 */
export interface SettleWatcher {
  jobSettled(job: CoreJob): void;
}

/**
 * What only some jobs need: per-job retry or timeout, an id, a parked redrive, an attempt that
 * failed before its handler returned (the core's fields); a signal, a batch that follows the job,
 * a transfer list (the shell's). Kept off the job itself so that a plain queued job stays small;
 * made on first use.
 *
 * @internal
 */
export class JobExtras {
  /** The shell's: the running attempt's abort controller, made when the handler reads `job.signal`. */
  controller: AbortController | undefined = undefined;
  /** The shell's: why the attempt was aborted, for a controller made after the abort. */
  abortReason: unknown = undefined;
  /** The shell's: told when this job settles (the batch that follows it: its add signal, its addAll group). */
  watcher: SettleWatcher | undefined = undefined;
  /** The `transfer` add option (threads). */
  transfer: readonly ThreadTransferable[] | undefined = undefined;
  /** The `timeout` add option. */
  timeout: number | undefined = undefined;
  /** The `retry` add option. */
  retry: object | undefined = undefined;
  /** The `id` add option: a user id, looked up in its source while the job is in use (see `job-ids.ts`). */
  id: string | undefined = undefined;
  /** The generated id of the dead letter this job was redriven from: kept, never looked up. */
  keptId: string | undefined = undefined;
  /** The latest `updateProgress` value. */
  progress: JobProgress | undefined = undefined;
  /** A redriven job waiting for this one's handler to settle before it joins its source. */
  successor: CoreJob | undefined = undefined;
  /** Set while this redrive is parked behind its predecessor's running handler (see `Core.park`). */
  parked = false;
  /** That predecessor, while this job is parked: the id goes back to it if this job leaves unparked. */
  parkedBehind: CoreJob | undefined = undefined;
  /** When it was parked (the worker's clock): it is due from then. */
  parkedSince = 0;
  /** The running attempt's deadline, when it has a timeout. */
  deadline: Deadline | undefined = undefined;
  /** Set when the running attempt failed before its handler returned (a timeout) and will be retried. */
  attemptError: unknown = undefined;
  /** Whether `attemptError` is set (the error itself may be any value). */
  attemptFailed = false;
  /** The wait before the retry that `attemptError` calls for. */
  retryDelay = 0;
}

/** Why a job was cancelled, until someone asks for the `CancelledError` itself. @internal */
export class CancelReason {
  readonly reason: unknown;
  constructor(reason: unknown) {
    this.reason = reason;
  }

  static of(reason: unknown): CancelReason {
    return reason === undefined ? NO_REASON : new CancelReason(reason);
  }
}

const NO_REASON = new CancelReason(undefined);

/** Where a job keeps its value once someone asked for its result promise (see `CoreJob.value`). @internal */
export interface OutcomeHolder {
  value: unknown;
}

const STATE_MASK = 0b111;
const IN_FLIGHT = 0b1000;
/** Set once `outcome` holds the result promise's pair instead of the value. */
const PROMISED = 0b10000;
/** Set when the job is timed in full (a quiet worker times every job: see `Sampler` in `observe/timings.ts`). */
const TIMED_IN_FULL = 0b100000;
const ATTEMPTS_SHIFT = 6;

/** The next job's `seq`. */
let nextSeq = 1;

/** Jobs count from 1 again after the shape anchors were made (see `shape-anchors.ts`). @internal */
export function restartJobCount(): void {
  nextSeq = 1;
}

/**
 * The deadline of one running attempt that has a timeout. Made only for jobs with a `timeout`
 * (the user asked for it), so a job without one pays nothing for the feature.
 *
 * @internal
 */
export class Deadline implements HeapPlaced {
  /** When the attempt times out, on the core's clock. */
  readonly at: number;
  readonly job: CoreJob;
  /** The timeout in ms, for the error message. */
  readonly ms: number;
  /** Position in the heap (1 or more), or -1 once removed. */
  heapAt = -1;
  constructor(at: number, job: CoreJob, ms: number) {
    this.at = at;
    this.job = job;
    this.ms = ms;
  }
}

/**
 * A job's lane as its record names it. The lane is the core's `Lane` (`lane.ts`), which holds its
 * jobs and so is declared after them; this is what the record itself, and the code that has only
 * a job in hand (`job-ids.ts`, the core's counters), read of it. The core narrows `home` to `Lane`
 * where it needs the rest; the shell's handle narrows it to its `Source`.
 *
 * @internal
 */
export interface JobHome {
  /** The source's name. */
  readonly name: string;
  /** Whether its jobs belong to a remote engine. */
  readonly isRemote: boolean;
  /** Counters of its jobs since it was bound. */
  readonly counters: WorkerCounters;
  /** Redrives parked behind their predecessor's running handler. */
  parked: Set<CoreJob> | undefined;
  /** The jobs in use that have a user id, by id. */
  ids: Map<string, CoreJob> | undefined;
}

/**
 * The core's record of one job (SPEC 12): its place in its lane, its state, attempts and value.
 * The public handle (`JobRecord` in `job.ts`, which is also what the handler gets) extends
 * it: one object per job. Only the core changes these fields; the handle reads them.
 * Nothing here allocates unless asked: the id string and the extras are made on first use.
 *
 * @internal
 */
export class CoreJob {
  // Every field is declared and assigned in the constructor, none is a class field: V8 builds an
  // object of a subclass (the job handle) about 10 ns slower when its base class defines fields
  // (a job costs 4 ns to make otherwise; bench/NOTEBOOK.md, 2026-12-07).
  /** Process-wide add order: the last tie-break everywhere. */
  declare readonly seq: number;
  declare readonly data: unknown;
  /** The lane (source) this job belongs to: a `Lane` (see {@link JobHome}). */
  declare readonly home: JobHome;
  /** When the job becomes (or became) due, on the worker's monotonic clock (ms); {@link UNTIMED} when it was due on add and no ordering needed the time. */
  declare dueAt: number;
  /**
   * `state` (bits 0-2), `inFlight` (bit 3), whether {@link outcomeField} holds the result promise
   * (bit 4), whether it is timed in full (bit 5) and `attempts` (the rest) packed in one small
   * integer: five fields in one property keep a queued job 24 bytes smaller.
   */
  declare protected bits: number;
  /**
   * The job's {@link value} or, once someone asked for the result promise, that promise's pair,
   * which then keeps the value: one field for both keeps every job 8 bytes smaller, and only a
   * job whose result was asked for pays the 8 bytes, on its pair. (No `#private` member on this
   * class: V8 would add a brand slot to every job for a private method.)
   */
  declare protected outcomeField: unknown;
  /** Rarely needed state; see {@link JobExtras}. */
  declare ext: JobExtras | undefined;
  /** The shell's, never read here: the async context the job runs in (SPEC 13, see `JobRecord.scope`). */
  declare scope: unknown;

  constructor(home: JobHome, data: unknown, dueAt: number, state: State) {
    this.seq = nextSeq++;
    this.home = home;
    this.data = data;
    this.dueAt = dueAt;
    this.bits = state;
    this.outcomeField = undefined;
    this.ext = undefined;
    this.scope = undefined;
  }

  /**
   * Order within a priority queue (lower first): 0 here, as in every FIFO source. A job of
   * another priority is a subclass, so FIFO jobs carry no field for it.
   */
  get priority(): number {
    return 0;
  }

  /** Its key in a keyed lane; `undefined` elsewhere (a keyed job is a subclass, see {@link KeyedJob}). */
  get key(): string | undefined {
    return undefined;
  }

  /** The result once succeeded, the error once failed or cancelled. */
  get value(): unknown {
    const outcome = this.outcomeField;
    return (this.bits & PROMISED) === 0 ? outcome : (outcome as OutcomeHolder).value;
  }

  set value(value: unknown) {
    if ((this.bits & PROMISED) === 0) this.outcomeField = value;
    else (this.outcomeField as OutcomeHolder).value = value;
  }

  /** The result promise's holder, once someone asked for it. */
  get promised(): OutcomeHolder | undefined {
    return (this.bits & PROMISED) === 0 ? undefined : (this.outcomeField as OutcomeHolder);
  }

  /** Hands the value to `holder` and keeps `holder` from now on (the handle's result promise). */
  protected adoptOutcome(holder: OutcomeHolder): void {
    holder.value = this.outcomeField;
    this.outcomeField = holder;
    this.bits |= PROMISED;
  }

  /** Where the job is (see {@link State}). */
  get state(): State {
    return this.bits & STATE_MASK;
  }

  set state(state: State) {
    this.bits = (this.bits & ~STATE_MASK) | state;
  }

  /** True from the start of an attempt until its handler settles, even if the job was cancelled meanwhile. */
  get inFlight(): boolean {
    return (this.bits & IN_FLIGHT) !== 0;
  }

  set inFlight(inFlight: boolean) {
    this.bits = inFlight ? this.bits | IN_FLIGHT : this.bits & ~IN_FLIGHT;
  }

  /**
   * Whether the stats time this job as itself (weight 1), chosen at add while its worker is quiet;
   * otherwise it is timed only if `isSampled(seq)`, standing for `SAMPLE_EVERY` jobs.
   */
  get timedInFull(): boolean {
    return (this.bits & TIMED_IN_FULL) !== 0;
  }

  /** Marks the job timed in full (at its admission, before anything reads it). */
  timeInFull(): void {
    this.bits |= TIMED_IN_FULL;
  }

  /** Attempts started so far. */
  get attempts(): number {
    return this.bits >>> ATTEMPTS_SHIFT;
  }

  /** The user id, or a generated one: the decimal `seq`, a form no user id takes (see `checkJobId`). */
  get id(): string {
    const ext = this.ext;
    if (ext === undefined) return `${this.seq}`;
    return ext.id ?? ext.keptId ?? `${this.seq}`;
  }

  /** The rarely needed part, made on first use. */
  extras(): JobExtras {
    return (this.ext ??= new JobExtras());
  }

  /**
   * Starts an attempt of a waiting job that is not in flight: running, in flight and one more
   * attempt, in one write of the packed field; and a fresh signal, nothing failed yet. Returns
   * false, changing nothing, if the job is not waiting or is still in flight (the core calls it
   * as the attempt starts, and throws then).
   */
  claim(): boolean {
    const bits = this.bits;
    if ((bits & (STATE_MASK | IN_FLIGHT)) !== State.Due) return false;
    this.bits = (bits | State.Running | IN_FLIGHT) + (1 << ATTEMPTS_SHIFT);
    const ext = this.ext;
    if (ext === undefined) return true;
    ext.controller = undefined;
    ext.abortReason = undefined;
    ext.attemptError = undefined;
    ext.attemptFailed = false;
    return true;
  }

  /** Whether the job is running with its attempt in flight (neither cancelled nor settled meanwhile). */
  get runningInFlight(): boolean {
    return (this.bits & (STATE_MASK | IN_FLIGHT)) === (State.Running | IN_FLIGHT);
  }

  /** A running attempt in flight succeeded: succeeded and no longer in flight, in one write. */
  succeedInFlight(): void {
    this.bits = (this.bits & ~(STATE_MASK | IN_FLIGHT)) | State.Succeeded;
  }
}

/**
 * A job of a keyed lane (SPEC 10): the fields the key machinery keeps on it. The handle's keyed
 * subclass has them.
 *
 * @internal
 */
export interface KeyedJob extends CoreJob {
  readonly keyName: string;
  /**
   * The state of its key while the job waits or runs (which keeps the key active, so this is
   * the live one): spares a lookup by name at each transition. Set by `KeyedJobs`.
   */
  keyState: object | undefined;
  /** The next due job of its key in a keyed FIFO queue (the key's list runs through its jobs, see `KeyFifo`). */
  nextInKey: KeyedJob | undefined;
}
