import type { CoreJob } from './job-record.js';

/**
 * What a transition of the core leads to, for the shell to act on once the transition is
 * complete: settle a promise, abort a signal, emit an event. Recording instead of acting keeps
 * user code (listeners, signal handlers) out of the middle of a state change, so whatever it
 * calls back into always finds a consistent worker.
 *
 * @internal
 */
export const enum Note {
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
   * Takes the next note, or returns -1 when none is left; its fields are then read with
   * {@link job}, {@link value} and {@link n} until the next call. A taken note keeps no job (or
   * its data) alive.
   */
  next(): Note | -1 {
    const at = this.#read;
    if (at === this.#write) {
      this.#job = undefined;
      this.#value = undefined;
      if (at > 0) this.#rewind();
      return -1;
    }
    this.#read = at + 1;
    const jobs = this.#jobs;
    const values = this.#values;
    this.#job = jobs[at];
    this.#value = values[at];
    this.#n = this.#numbers[at] as number;
    jobs[at] = undefined;
    values[at] = undefined;
    return this.#notes[at] as Note;
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

  /** Everything was acted on: write from the start again, and give a burst's capacity back. */
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
