import { type CoreJob, UNTIMED } from './job-record.js';
import { keepShape } from './shape-anchors.js';

/** Room for this many entries at first; the table doubles as it fills. */
const INITIAL_ROOM = 16;

/**
 * The add times of one source's sampled jobs (see `isSampled` in `sampling.ts`) that still wait, in
 * add order, in typed arrays by job `seq`: nothing here points at a job record. (A list of the
 * records did the same, and its references alone moved the cost of a no-op job by 20-25 % either
 * way, as the garbage collector found a sample of records kept alive, or let go of, in the middle
 * of a run: `bench/RESULTS.md`, "What a sampled job costs, third round".)
 *
 * Jobs mostly start in add order, and then the one starting is at the head: O(1). One that starts
 * out of order (a priority queue, a delayed job promoted after younger ones) is found by a binary
 * search, O(log n): entries are added in rising `seq` order (a job's `seq` is taken when it is made,
 * just before it joins), and a job that left out of order leaves a hole that keeps its place in
 * that order, its `seq` negated, dropped when the head reaches it. A quiet worker times every job
 * (SPEC 11), so the table may hold every waiting job of its source. Every way a waiting job leaves takes its entry: a start (`Core.takeAddTime`), a
 * cancel (`WaitAges.forget`), a purge or a hand-back (`WaitAges.forgetWaiting`, which drops them all).
 *
 * @internal
 */
export class SampledAdds {
  #seqs = new Float64Array(INITIAL_ROOM);
  #addedAt = new Float64Array(INITIAL_ROOM);
  /** The job's `dueAt` when it was added: `UNTIMED`, or when a delayed job comes due. */
  #dueAt = new Float64Array(INITIAL_ROOM);
  #head = 0;
  #tail = 0;

  /** A sampled job joined the source at `now` (its `dueAt` set already). */
  add(job: CoreJob, now: number): void {
    if (this.#tail === this.#seqs.length) this.#makeRoom();
    const at = this.#tail++;
    this.#seqs[at] = job.seq;
    this.#addedAt[at] = now;
    this.#dueAt[at] = job.dueAt;
  }

  /** The add time of `job`, which is leaving the source (starting or cancelled), or `undefined`; forgets it. */
  take(job: CoreJob): number | undefined {
    const seqs = this.#seqs;
    const seq = job.seq;
    const tail = this.#tail;
    let at = this.#head;
    if (at === tail) return undefined;
    if (seqs[at] !== seq) {
      at = this.#find(seq);
      if (at < 0) return undefined;
    }
    const addedAt = this.#addedAt[at] as number;
    seqs[at] = -seq;
    let head = this.#head;
    while (head < tail && (seqs[head] as number) < 0) head++;
    if (head === tail) head = this.#tail = 0;
    this.#head = head;
    return addedAt;
  }

  /** Where the entry of `seq` is, or -1: a binary search on the entries' rising `|seq|`. */
  #find(seq: number): number {
    const seqs = this.#seqs;
    let low = this.#head;
    let high = this.#tail - 1;
    while (low <= high) {
      const mid = (low + high) >>> 1;
      const at = Math.abs(seqs[mid] as number);
      if (at < seq) low = mid + 1;
      else if (at > seq) high = mid - 1;
      else return seqs[mid] === seq ? mid : -1;
    }
    // Not where the order puts it: look everywhere, in case a job joined after a younger one.
    for (let at = this.#head; at < this.#tail; at++) if (seqs[at] === seq) return at;
    return -1;
  }

  /**
   * How long the job held here that has been due longest at `now` has been due, ms, or -1 when
   * none is due or nothing is held. Every entry is read (for `stats()` only: every
   * waiting job of a quiet worker, about one in `SAMPLE_EVERY` of a busy one): a job added earlier than another may come due later (a
   * delayed job, or a retry), so the oldest added is not always the oldest due.
   */
  oldestDueAge(now: number): number {
    const seqs = this.#seqs;
    let oldest = -1;
    for (let at = this.#head; at < this.#tail; at++) {
      if ((seqs[at] as number) < 0) continue;
      const dueAt = this.#dueAt[at] as number;
      const since = dueAt === UNTIMED ? (this.#addedAt[at] as number) : dueAt;
      if (since <= now) oldest = Math.max(oldest, now - since);
    }
    return oldest;
  }

  /** How many entries the table has room for before it must move or grow. */
  get room(): number {
    return this.#seqs.length;
  }

  /** Whether nothing is held. */
  get empty(): boolean {
    return this.#head === this.#tail;
  }

  /** The table is full up to its end: moves the live part to the front, doubling the room if it is more than half full. */
  #makeRoom(): void {
    const seqs = this.#seqs;
    const tail = this.#tail;
    // Holes are left out: behind a job that stays (a priority queue's stuck low-priority one),
    // the jobs that left out of order would otherwise keep their entries, and the table (and
    // every oldestDueAge scan) would grow with the jobs that passed, not with those that wait.
    let live = 0;
    for (let at = this.#head; at < tail; at++) if ((seqs[at] as number) > 0) live++;
    const room = live * 2 > seqs.length ? seqs.length * 2 : seqs.length;
    const to = room === seqs.length ? undefined : [new Float64Array(room), new Float64Array(room), new Float64Array(room)];
    const [toSeqs, toAddedAt, toDueAt] = to ?? [seqs, this.#addedAt, this.#dueAt];
    const addedAt = this.#addedAt;
    const dueAt = this.#dueAt;
    let next = 0;
    // Moving down within the same arrays is safe: `next` never passes `at`.
    for (let at = this.#head; at < tail; at++) {
      const seq = seqs[at] as number;
      if (seq < 0) continue;
      toSeqs[next] = seq;
      toAddedAt[next] = addedAt[at] as number;
      toDueAt[next] = dueAt[at] as number;
      next++;
    }
    this.#seqs = toSeqs;
    this.#addedAt = toAddedAt;
    this.#dueAt = toDueAt;
    this.#head = 0;
    this.#tail = live;
  }
}

// A source lets go of its table when it empties, so tables come and go (see `shape-anchors.ts`).
keepShape(new SampledAdds());
