import type { JobRecord } from '../job.js';

/**
 * What a transition of the core leads to, for the shell to act on once the transition is
 * complete: settle a promise, abort a signal, emit an event. Recording instead of acting keeps
 * user code (listeners, signal handlers) out of the middle of a state change, so whatever it
 * calls back into always finds a consistent worker.
 *
 * @internal
 */
export const enum Note {
  /** A job started: emit `active`. */
  Active,
  /** A job succeeded with `value`: resolve its promise, emit `completed`. */
  Completed,
  /** An attempt failed with `value` and will be retried in `n` ms: emit `retrying`. */
  Retrying,
  /** A job failed for good with `value`: reject its promise, emit `failed`, and `dead` when `n` is 1 (kept). */
  Failed,
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

/**
 * The notes of the transitions not yet acted on, in order, in three parallel arrays so that
 * recording one costs no allocation.
 *
 * @internal
 */
export class Outbox {
  readonly #notes: Note[] = [];
  readonly #jobs: (JobRecord | undefined)[] = [];
  readonly #values: unknown[] = [];
  readonly #numbers: number[] = [];
  #read = 0;

  /** Whether anything waits to be acted on. */
  get pending(): boolean {
    return this.#read < this.#notes.length;
  }

  record(note: Note, job: JobRecord | undefined, value: unknown, n: number): void {
    this.#notes.push(note);
    this.#jobs.push(job);
    this.#values.push(value);
    this.#numbers.push(n);
  }

  /**
   * Takes the next note, or returns -1 when none is left; its fields are then read with
   * {@link job}, {@link value} and {@link n} until the next call.
   */
  next(): Note | -1 {
    const read = this.#read;
    if (read === this.#notes.length) {
      if (read > 0) this.#clear();
      return -1;
    }
    this.#read = read + 1;
    return this.#notes[read] as Note;
  }

  /** The job of the note last taken. */
  get job(): JobRecord {
    return this.#jobs[this.#read - 1] as JobRecord;
  }

  /** The value of the note last taken. */
  get value(): unknown {
    return this.#values[this.#read - 1];
  }

  /** The number of the note last taken. */
  get n(): number {
    return this.#numbers[this.#read - 1] as number;
  }

  /** Forgets what was acted on, so no note keeps a job (or its data) alive. */
  #clear(): void {
    this.#notes.length = 0;
    this.#jobs.length = 0;
    this.#values.length = 0;
    this.#numbers.length = 0;
    this.#read = 0;
  }
}
