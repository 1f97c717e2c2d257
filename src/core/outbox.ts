import type { CoreJob } from './job-record.js';

/**
 * What a transition of the core leads to, for the shell to act on once the transition is
 * complete: run a handler, settle a promise, abort a signal, emit an event. Every consequence
 * goes through here, the hot path's too (a start, a success). Recording instead of acting keeps
 * user code (listeners, signal handlers) out of the middle of a state change, so whatever it
 * calls back into always finds a consistent worker.
 *
 * @internal
 */
export const enum Note {
  /** An attempt of a job started (a slot taken): emit `active`, then run its handler, in its context. */
  Started,
  /** A job succeeded with its `value`: resolve its promise, emit `completed`. */
  Succeeded,
  /** An attempt failed with `value` and will be retried in `n` ms: emit `retrying`. */
  Retrying,
  /** A job failed for good with `value`: reject its promise, emit `failed`, and `dead` when `n` is 1 (kept). */
  Failed,
  /** A remote job's attempt failed with `value` and its engine will run it again: settle its handle, emit `retrying` with no delay. */
  RemoteRetrying,
  /** A job was cancelled: reject its promise, abort its signal when `n` is 1 (it was running), emit `cancelled`. */
  Cancelled,
  /** A running attempt timed out with `value` (a `TimeoutError`): abort its signal (and its thread). */
  TimedOut,
  /** The source `value` has fewer waiting jobs than before: resolve its `onSizeLessThan` waiters. */
  Shrunk,
  /** `pause()` took effect: emit `paused`. */
  Paused,
  /** `resume()` took effect: emit `resumed`. */
  Resumed,
  /** The worker fail-stopped on the `InvariantError` `value`: reject the idle waiters, emit `halted`. */
  Halted,
}

/** Past this many notes at once (a purge of many jobs), the arrays are let go once drained. */
const KEEP_CAPACITY = 1024;

/**
 * The notes of the transitions not yet acted on, in order, in parallel arrays written by index,
 * so that recording one costs no allocation and draining costs no truncation.
 *
 * @internal
 */
export class Outbox {
  #notes: Note[] = [];
  #jobs: (CoreJob | undefined)[] = [];
  #values: unknown[] = [];
  #numbers: number[] = [];
  #read = 0;
  #write = 0;
  /** The fields of the note last taken. */
  #job: CoreJob | undefined = undefined;
  #value: unknown = undefined;
  #n = 0;

  /** Whether anything waits to be acted on. */
  get pending(): boolean {
    return this.#read < this.#write;
  }

  record(note: Note, job: CoreJob | undefined, value: unknown, n: number): void {
    const at = this.#write++;
    this.#notes[at] = note;
    this.#jobs[at] = job;
    this.#values[at] = value;
    this.#numbers[at] = n;
  }

  /**
   * Takes the next note (one is {@link pending}); its fields are then read with {@link job},
   * {@link value} and {@link n} until the next call. The arrays let go of it at once, and once
   * the last is taken they are written from the start again.
   */
  take(): Note {
    const at = this.#read;
    const jobs = this.#jobs;
    const values = this.#values;
    this.#job = jobs[at];
    jobs[at] = undefined;
    this.#value = values[at];
    values[at] = undefined;
    this.#n = this.#numbers[at] as number;
    const note = this.#notes[at] as Note;
    if (at + 1 === this.#write) this.#rewind();
    else this.#read = at + 1;
    return note;
  }

  /** The notes taken so far are acted on: the last one keeps no job (or its data) alive. */
  release(): void {
    this.#job = undefined;
    this.#value = undefined;
  }

  /** {@link take}, or -1 (having let go of the last note, see {@link release}) when none is left. */
  next(): Note | -1 {
    if (this.#read === this.#write) {
      this.release();
      return -1;
    }
    return this.take();
  }

  /** The job of the note last taken. */
  get job(): CoreJob {
    return this.#job as CoreJob;
  }

  /** The value of the note last taken. */
  get value(): unknown {
    return this.#value;
  }

  /** The number of the note last taken. */
  get n(): number {
    return this.#n;
  }

  /** Every note is taken: write from the start again, and give a burst's capacity back. */
  #rewind(): void {
    if (this.#write > KEEP_CAPACITY) {
      this.#notes = [];
      this.#jobs = [];
      this.#values = [];
      this.#numbers = [];
    }
    this.#read = 0;
    this.#write = 0;
  }
}
