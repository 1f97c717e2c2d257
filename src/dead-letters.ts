/**
 * A job that failed its last attempt, as kept in `worker.deadLetters`.
 *
 * @typeParam T - job data
 */
export interface DeadLetter<T = unknown> {
  /** The job's id. */
  readonly id: string;
  /** Its data. */
  readonly data: T;
  /** Name of the source it came from. */
  readonly source: string;
  /** The error of its last attempt. */
  readonly error: unknown;
  /** Attempts it made. */
  readonly attempts: number;
  /** When it failed for good. */
  readonly failedAt: Date;
  /** Its key, for a job of a queue bound with `keys` (`redrive` keeps it). */
  readonly key?: string;
}

/**
 * Dead letters, bounded: the oldest is dropped first once `limit` are kept.
 *
 * @internal
 */
export class DeadLetterStore<T> {
  readonly #limit: number;
  #entries: DeadLetter<T>[] = [];
  /** What `redrive` needs to put an entry back: its source's priority and the job's add options. */
  readonly #origins = new WeakMap<DeadLetter<T>, unknown>();

  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Whether it keeps anything (a limit of 0 keeps none). */
  get keeps(): boolean {
    return this.#limit > 0;
  }

  get entries(): readonly DeadLetter<T>[] {
    return this.#entries;
  }

  /** Keeps `entry` (dropping the oldest past the limit); returns whether it is kept. */
  add(entry: DeadLetter<T>, origin: unknown): boolean {
    if (this.#limit === 0) return false;
    this.#origins.set(entry, origin);
    this.#entries.push(entry);
    if (this.#entries.length > this.#limit) this.#entries.shift();
    return true;
  }

  /** The origin of an entry that is still kept, or `undefined`. */
  originOf(entry: DeadLetter<T>): unknown {
    return this.#entries.includes(entry) ? this.#origins.get(entry) : undefined;
  }

  remove(entry: DeadLetter<T>): void {
    this.#entries = this.#entries.filter((other) => other !== entry);
  }
}
