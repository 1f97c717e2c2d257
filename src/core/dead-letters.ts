import type { DeadLetter } from '../api/dead-letter.js';

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

  /** {@link entries} as last handed out, until the next change. */
  #frozen: readonly DeadLetter<T>[] | undefined = undefined;

  /**
   * The entries, oldest first, as a frozen copy made on the first read after a change: a caller
   * cannot reorder or empty the store, and a loop that redrives over it sees every entry.
   */
  get entries(): readonly DeadLetter<T>[] {
    this.#frozen ??= Object.freeze(this.#entries.slice());
    return this.#frozen;
  }

  /** Keeps `entry` (dropping the oldest past the limit); returns whether it is kept. */
  add(entry: DeadLetter<T>, origin: unknown): boolean {
    if (this.#limit === 0) return false;
    this.#origins.set(entry, origin);
    this.#entries.push(entry);
    if (this.#entries.length > this.#limit) this.#entries.shift();
    this.#frozen = undefined;
    return true;
  }

  /** The origin of an entry that is still kept, or `undefined`. */
  originOf(entry: DeadLetter<T>): unknown {
    return this.#entries.includes(entry) ? this.#origins.get(entry) : undefined;
  }

  remove(entry: DeadLetter<T>): void {
    const at = this.#entries.indexOf(entry);
    if (at < 0) return;
    this.#entries.splice(at, 1);
    this.#frozen = undefined;
  }
}
