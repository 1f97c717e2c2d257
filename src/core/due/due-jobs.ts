import { State, type CoreJob } from '../job-record.js';
import { Heap, KeyedHeap } from './heap.js';
import { ChunkedQueue } from './chunked-queue.js';

/**
 * The due jobs of one source, in the order they should start. Cancelled jobs are left in place
 * (a tombstone) and skipped when reached, so cancelling costs O(1). A tombstone still holds its
 * job's data, so they must not pile up: the container is emptied when its last live job leaves,
 * and compacted once tombstones outnumber live jobs (see {@link COMPACT_MIN}). What it holds is
 * then bounded by its live jobs, whatever was cancelled.
 *
 * @internal
 */
export interface DueJobs {
  /** Live (not cancelled) jobs held. */
  readonly length: number;
  /** A job that was due when added. */
  pushFresh(job: CoreJob): void;
  /** A delayed job that has come due. */
  pushPromoted(job: CoreJob): void;
  /** Removes and returns the next live job, or `undefined`. */
  shift(): CoreJob | undefined;
  /** The next live job without removing it, or `undefined`. */
  peek(): CoreJob | undefined;
  /** Notes that a job held here was cancelled. */
  markRemoved(): void;
  /** Every live job, in no particular order, and empties the container. */
  drain(): CoreJob[];
  /**
   * While due jobs of the source are still held by its delayed jobs (a promotion in progress):
   * whether their earliest, `next`, must move here for this container to give and count its jobs
   * right. FIFO: when it holds no promoted job (the earliest of them goes before every later one,
   * so it is enough to merge with the jobs due on add), or when `next` goes before the last one
   * it holds (a retry at the instant of a promotion: the promoted jobs must all come before those
   * left in the heap). A priority queue: when it is empty (it then needs them all before it
   * gives a job, see {@link needsEveryDue}).
   */
  wantsPromoted(next: CoreJob): boolean;
  /** Whether every due job must have moved here before the next one can be told (a priority queue). */
  readonly needsEveryDue: boolean;
}

/**
 * Fewest tombstones worth a compaction. A compaction costs O(live + dead) = O(dead), since it
 * runs only when dead > live, and the dead count starts again from zero after it: each cancel
 * pays O(1) amortised whatever this number is. It only spares tiny containers a pass for a few
 * tombstones; at most this many (or as many as there are live jobs) wait for the next pass.
 *
 * @internal
 */
export const COMPACT_MIN = 16;

/** Due-time order, then add order. */
export function earlierDue(a: CoreJob, b: CoreJob): boolean {
  return a.dueAt < b.dueAt || (a.dueAt === b.dueAt && a.seq < b.seq);
}

/** Priority number, then due time, then add order. */
function higherPriority(a: CoreJob, b: CoreJob): boolean {
  return a.priority < b.priority || (a.priority === b.priority && earlierDue(a, b));
}

function isLive(job: CoreJob): boolean {
  return job.state !== State.Cancelled;
}

/**
 * Puts `job` at its place in `queue` by due time, then add order, and returns the new tail.
 * Jobs join their queue in that order, so they are pushed at the tail, except on an exact tie of
 * due times: a job retried without backoff at the instant that jobs added after it came due, or a
 * redrive let in as its predecessor's handler settles at the instant a new job was added. It
 * goes before them, as in a priority queue (SPEC 5), so that {@link FifoDueJobs.shift}, which
 * merges the heads of its two queues, keeps reading each in order. O(n), on such ties only.
 */
export function insertInOrder(queue: ChunkedQueue<CoreJob>, job: CoreJob): CoreJob {
  const jobs: CoreJob[] = [];
  for (let next = queue.shift(); next !== undefined; next = queue.shift()) jobs.push(next);
  let at = jobs.length;
  while (at > 0 && earlierDue(job, jobs[at - 1] as CoreJob)) at--;
  jobs.splice(at, 0, job);
  for (const next of jobs) queue.push(next);
  return jobs[jobs.length - 1] as CoreJob;
}

/**
 * FIFO by due time with O(1) operations: jobs due on add go to one queue, delayed jobs that came
 * due to another. Each is sorted by due time on its own (see `insertInOrder`), so the next job
 * is whichever head is earlier.
 *
 * @internal
 */
export class FifoDueJobs implements DueJobs {
  #fresh = new ChunkedQueue<CoreJob>();
  #promoted = new ChunkedQueue<CoreJob>();
  /** The jobs pushed last into `#fresh` and `#promoted`: a new one almost always goes after them. */
  #freshTail: CoreJob | undefined = undefined;
  #promotedTail: CoreJob | undefined = undefined;
  #live = 0;
  #dead = 0;

  get length(): number {
    return this.#live;
  }

  pushFresh(job: CoreJob): void {
    const tail = this.#freshTail;
    // A new job has the highest add order: only a redrive that waited for its predecessor's
    // handler (added earlier, due now) can need a place before the tail.
    if (tail !== undefined && job.seq < tail.seq && this.#fresh.length > 0 && earlierDue(job, tail)) {
      this.#freshTail = insertInOrder(this.#fresh, job);
    } else {
      this.#fresh.push(job);
      this.#freshTail = job;
    }
    this.#live++;
  }

  pushPromoted(job: CoreJob): void {
    const tail = this.#promotedTail;
    if (tail !== undefined && this.#promoted.length > 0 && earlierDue(job, tail)) this.#promotedTail = insertInOrder(this.#promoted, job);
    else {
      this.#promoted.push(job);
      this.#promotedTail = job;
    }
    this.#live++;
  }

  shift(): CoreJob | undefined {
    if (this.#live === 0) return undefined;
    if (this.#dead === 0 && this.#promoted.length === 0) {
      // The common case: no tombstone anywhere and nothing promoted, so the next fresh job is it.
      const job = this.#fresh.shift();
      if (--this.#live === 0) this.#emptied();
      return job;
    }
    for (;;) {
      const fresh = this.#fresh.peek();
      const promoted = this.#promoted.peek();
      const job = promoted === undefined || (fresh !== undefined && earlierDue(fresh, promoted)) ? this.#fresh.shift() : this.#promoted.shift();
      if ((job as CoreJob).state !== State.Cancelled) {
        if (--this.#live === 0) this.#emptied();
        return job;
      }
      this.#dead--;
    }
  }

  /** The last live job left: keep nothing of it (its tail reference) or of the tombstones. */
  #emptied(): void {
    if (this.#dead > 0) this.#clear();
    else {
      this.#freshTail = undefined;
      this.#promotedTail = undefined;
    }
  }

  peek(): CoreJob | undefined {
    if (this.#live === 0) return undefined;
    this.#dropDeadHeads();
    const fresh = this.#fresh.peek();
    const promoted = this.#promoted.peek();
    return promoted === undefined || (fresh !== undefined && earlierDue(fresh, promoted)) ? fresh : promoted;
  }

  readonly needsEveryDue = false;

  wantsPromoted(next: CoreJob): boolean {
    const promoted = this.#promoted;
    while (promoted.peek()?.state === State.Cancelled) {
      promoted.shift();
      this.#dead--;
    }
    if (promoted.length === 0) return true;
    const tail = this.#promotedTail;
    return tail !== undefined && earlierDue(next, tail);
  }

  #dropDeadHeads(): void {
    for (const queue of [this.#fresh, this.#promoted]) {
      while (queue.peek()?.state === State.Cancelled) {
        queue.shift();
        this.#dead--;
      }
    }
  }

  markRemoved(): void {
    this.#live--;
    this.#dead++;
    if (this.#live === 0) this.#clear();
    else if (this.#dead >= COMPACT_MIN && this.#dead > this.#live) {
      this.#fresh.filterInPlace(isLive);
      this.#promoted.filterInPlace(isLive);
      this.#dead = 0;
    }
  }

  drain(): CoreJob[] {
    const jobs: CoreJob[] = [];
    for (const queue of [this.#fresh, this.#promoted]) {
      for (let job = queue.shift(); job !== undefined; job = queue.shift()) if (isLive(job)) jobs.push(job);
    }
    this.#clear();
    return jobs;
  }

  /** Drops everything held: only tombstones (or nothing) are left. */
  #clear(): void {
    this.#fresh.clear();
    this.#promoted.clear();
    this.#freshTail = undefined;
    this.#promotedTail = undefined;
    this.#live = 0;
    this.#dead = 0;
  }
}

/**
 * A heap of jobs with tombstones: cancelled jobs stay in the heap, are counted as dead and are
 * dropped when they reach the top; the heap is emptied when its last live job leaves and rebuilt
 * once the dead outnumber the live (as in {@link FifoDueJobs}).
 *
 * @internal
 */
class TombstoneHeap {
  readonly #heap: Heap<CoreJob>;
  #live = 0;
  #dead = 0;

  constructor(less: (a: CoreJob, b: CoreJob) => boolean) {
    this.#heap = new Heap<CoreJob>(less);
  }

  /** Live jobs held. */
  get length(): number {
    return this.#live;
  }

  push(job: CoreJob): void {
    this.#heap.push(job);
    this.#live++;
  }

  /** The first live job, or `undefined`. */
  peek(): CoreJob | undefined {
    const heap = this.#heap;
    for (let top = heap.peek(); top !== undefined && top.state === State.Cancelled; top = heap.peek()) {
      heap.pop();
      this.#dead--;
    }
    return heap.peek();
  }

  /** Removes and returns the first live job, or `undefined`. */
  pop(): CoreJob | undefined {
    const top = this.peek();
    if (top !== undefined) {
      this.#heap.pop();
      if (--this.#live === 0 && this.#dead > 0) this.#clear(); // only tombstones are left
    }
    return top;
  }

  markRemoved(): void {
    this.#live--;
    this.#dead++;
    if (this.#live === 0) this.#clear();
    else if (this.#dead >= COMPACT_MIN && this.#dead > this.#live) {
      this.#heap.filterInPlace(isLive);
      this.#dead = 0;
    }
  }

  drain(): CoreJob[] {
    const jobs = this.#heap.values().filter(isLive);
    this.#clear();
    return jobs;
  }

  #clear(): void {
    this.#heap.clear();
    this.#live = 0;
    this.#dead = 0;
  }
}

/**
 * A heap by (priority number, due time, add order): a priority queue's due jobs.
 *
 * @internal
 */
export class PriorityDueJobs implements DueJobs {
  readonly #jobs = new TombstoneHeap(higherPriority);
  readonly needsEveryDue = true;

  wantsPromoted(): boolean {
    return this.#jobs.length === 0;
  }

  get length(): number {
    return this.#jobs.length;
  }

  pushFresh(job: CoreJob): void {
    this.#jobs.push(job);
  }

  pushPromoted(job: CoreJob): void {
    this.#jobs.push(job);
  }

  shift(): CoreJob | undefined {
    return this.#jobs.pop();
  }

  peek(): CoreJob | undefined {
    return this.#jobs.peek();
  }

  markRemoved(): void {
    this.#jobs.markRemoved();
  }

  drain(): CoreJob[] {
    return this.#jobs.drain();
  }
}

/**
 * Jobs that are not due yet, earliest first (due time, then add order), with the same tombstone
 * scheme. Jobs that arrive in that order (the usual case: one delay for all, or a `runAt` that
 * only moves forward) join a sorted run, a FIFO that gives them back in O(1) and in memory order;
 * the others go to a heap whose keys live in typed arrays ({@link KeyedHeap}). The earliest job
 * is the earlier of the two heads. A million jobs coming due at once then cost a FIFO shift each
 * instead of a heap pop (a pop at a million entries is a chain of ~20 dependent cache misses),
 * and 4 bytes each instead of the heap's 20.
 *
 * A promotion in progress (see `core/promotion.ts`) leaves jobs here that are due already: every
 * job held with a due time of at most {@link horizon} counts as due, though it has not moved yet.
 *
 * @internal
 */
export class DelayedJobs {
  readonly #heap = new KeyedHeap<CoreJob>();
  /** Jobs pushed in (due time, add order) order, each after the one before: sorted. */
  #run = new ChunkedQueue<CoreJob>();
  /** The last job pushed into {@link #run} (live or not) while it holds any. */
  #runTail: CoreJob | undefined = undefined;
  #live = 0;
  #dead = 0;
  /**
   * Jobs held here with a due time of at most this are due (promoted, but not moved yet), or
   * `-Infinity` when none is. Set by the promotion; nothing due at or before it may be pushed
   * while it is set (it would count as due before any promotion saw it).
   */
  horizon = -Infinity;

  get length(): number {
    return this.#live;
  }

  push(job: CoreJob): void {
    const tail = this.#runTail;
    if (this.#run.length === 0 || !earlierDue(job, tail as CoreJob)) {
      this.#run.push(job);
      this.#runTail = job;
    } else this.#heap.push(job, job.dueAt, job.seq);
    this.#live++;
  }

  /** The earliest live job, or `undefined`. */
  peek(): CoreJob | undefined {
    this.#dropDeadHeads();
    return this.#runFirst() ? this.#run.peek() : this.#heap.peek();
  }

  /** Due time of the earliest live job, or `Infinity`. */
  nextDueAt(): number {
    this.#dropDeadHeads();
    const head = this.#run.peek();
    const heapDue = this.#heap.peekKey();
    return head === undefined || heapDue < head.dueAt ? heapDue : head.dueAt;
  }

  /** Whether some live job held here is due already ({@link horizon}). */
  get backlogged(): boolean {
    return this.horizon !== -Infinity && this.nextDueAt() <= this.horizon;
  }

  /** Removes and returns the earliest live job if it is due at `now`. */
  shiftDue(now: number): CoreJob | undefined {
    if (this.nextDueAt() > now || this.#live === 0) return undefined;
    const job = (this.#runFirst() ? this.#run.shift() : this.#heap.pop()) as CoreJob;
    if (--this.#live === 0 && this.#dead > 0)
      this.#clear(); // only tombstones are left
    else if (this.#run.length === 0) this.#runTail = undefined;
    return job;
  }

  /**
   * {@link countDueBy} when it is O(1) (the sorted run all due by `at` and holding no cancelled
   * job, the heap none due by then), or -1.
   */
  quickCountDueBy(at: number): number {
    const tail = this.#runTail;
    if (this.#dead !== 0 || tail === undefined || tail.dueAt > at || this.#heap.peekKey() <= at) return -1;
    return this.#run.length;
  }

  /**
   * Live jobs held with a due time of at most `at` (`stats()` counts them as due): O(1) when the
   * sorted run is all due and none of it cancelled and the heap has none due (a burst coming due
   * at once, see {@link quickCountDueBy}), otherwise O(that many).
   */
  countDueBy(at: number): number {
    const quick = this.quickCountDueBy(at);
    if (quick >= 0) return quick;
    return this.countDueWhere(at, isLive);
  }

  /** Jobs held with a due time of at most `at` for which `counts` is true (it must be false for a cancelled job): O(those due). */
  countDueWhere(at: number, counts: (job: CoreJob) => boolean): number {
    let count = this.#heap.countAtMost(at, counts);
    this.#run.visitWhile((job) => {
      if (job.dueAt > at) return false;
      if (counts(job)) count++;
      return true;
    });
    return count;
  }

  markRemoved(): void {
    this.#live--;
    this.#dead++;
    if (this.#live === 0) this.#clear();
    else if (this.#dead >= COMPACT_MIN && this.#dead > this.#live) {
      this.#heap.filterInPlace(isLive);
      this.#run.filterInPlace(isLive);
      if (this.#run.length === 0) this.#runTail = undefined;
      this.#dead = 0;
    }
  }

  drain(): CoreJob[] {
    const jobs = this.#heap.values().filter(isLive);
    for (let job = this.#run.shift(); job !== undefined; job = this.#run.shift()) if (isLive(job)) jobs.push(job);
    this.#clear();
    return jobs;
  }

  /** Whether the earliest job is the run's head (both heads live, or absent). */
  #runFirst(): boolean {
    const head = this.#run.peek();
    if (head === undefined) return false;
    const heapDue = this.#heap.peekKey();
    return head.dueAt < heapDue || (head.dueAt === heapDue && head.seq < this.#heap.peekSecond());
  }

  #dropDeadHeads(): void {
    const heap = this.#heap;
    for (let top = heap.peek(); top !== undefined && top.state === State.Cancelled; top = heap.peek()) {
      heap.pop();
      this.#dead--;
    }
    const run = this.#run;
    for (let head = run.peek(); head !== undefined && head.state === State.Cancelled; head = run.peek()) {
      run.shift();
      this.#dead--;
    }
    if (run.length === 0) this.#runTail = undefined;
  }

  #clear(): void {
    this.#heap.clear();
    this.#run.clear();
    this.#runTail = undefined;
    this.#live = 0;
    this.#dead = 0;
    this.horizon = -Infinity;
  }
}
