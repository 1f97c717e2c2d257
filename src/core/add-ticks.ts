/** Room for this many entries at first; the table doubles as it fills. */
const INITIAL_ROOM = 8;
/**
 * Most entries kept. Past it (ticks of adds kept coming, each one job or each cancelled, while
 * the oldest job waited) every other entry after the first is dropped: a job then reads an older
 * tick's start, an upper bound of its age, and the table stays small.
 */
const MAX_ENTRIES = 4096;

/**
 * When the jobs of one FIFO source were added, to the tick: for each tick of adds (the adds of
 * one synchronous run) that brought it a job, the add order (`seq`) and time of the first. Every
 * job of the source from that `seq` on was added at that time or later, so the oldest due job's
 * age is known within a tick from the entry at or before its `seq`, without a time on any job.
 *
 * Entries older than the one the source's oldest waiting job needs are dropped as ticks come,
 * so the table holds about one entry per tick since the oldest waiting job came: one for a burst
 * of adds, one per job for jobs added one per turn; never more than {@link MAX_ENTRIES}.
 *
 * @internal
 */
export class AddTicks {
  #seqs = new Float64Array(INITIAL_ROOM);
  #times = new Float64Array(INITIAL_ROOM);
  #head = 0;
  #tail = 0;

  /** A tick brought its first job here, of add order `seq`, at `at`; the oldest waiting job is then of add order `oldest`. */
  note(seq: number, at: number, oldest: number): void {
    if (this.#tail - this.#head >= MAX_ENTRIES) this.#thin();
    if (this.#tail === this.#seqs.length) this.#makeRoom();
    this.#seqs[this.#tail] = seq;
    this.#times[this.#tail] = at;
    this.#tail++;
    this.#dropBefore(oldest);
  }

  /** The time by which the job of add order `seq` had not been added yet, at the latest (its tick's start), or `undefined`. */
  addedBy(seq: number): number | undefined {
    this.#dropBefore(seq);
    return this.#head < this.#tail && (this.#seqs[this.#head] as number) <= seq ? (this.#times[this.#head] as number) : undefined;
  }

  /** Forgets every entry (the source was purged). */
  clear(): void {
    this.#head = this.#tail = 0;
  }

  /** Entries kept. */
  get length(): number {
    return this.#tail - this.#head;
  }

  /** Drops the entries that a job of add order `seq` or later no longer needs: all before the last at or before it. */
  #dropBefore(seq: number): void {
    const seqs = this.#seqs;
    let head = this.#head;
    while (head + 1 < this.#tail && (seqs[head + 1] as number) <= seq) head++;
    this.#head = head;
  }

  /** Keeps the first entry and every other one after it, at the front of the table. */
  #thin(): void {
    const seqs = this.#seqs;
    const times = this.#times;
    let kept = 0;
    for (let at = this.#head; at < this.#tail; at += at === this.#head ? 1 : 2) {
      seqs[kept] = seqs[at] as number;
      times[kept] = times[at] as number;
      kept++;
    }
    this.#head = 0;
    this.#tail = kept;
  }

  /** Moves the live entries to the front, into a table twice as big if they fill half of it. */
  #makeRoom(): void {
    const live = this.#tail - this.#head;
    if (live * 2 <= this.#seqs.length) {
      this.#seqs.copyWithin(0, this.#head, this.#tail);
      this.#times.copyWithin(0, this.#head, this.#tail);
    } else {
      const seqs = new Float64Array(this.#seqs.length * 2);
      const times = new Float64Array(this.#seqs.length * 2);
      seqs.set(this.#seqs.subarray(this.#head, this.#tail));
      times.set(this.#times.subarray(this.#head, this.#tail));
      this.#seqs = seqs;
      this.#times = times;
    }
    this.#head = 0;
    this.#tail = live;
  }
}
