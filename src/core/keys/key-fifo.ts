import { earlierDue, type DueJobs } from '../../internal/due-jobs.js';
import { State, type JobRecord } from '../../job.js';

/** Fewest tombstones worth a compaction (see `internal/due-jobs.ts`). */
const COMPACT_MIN = 16;
/** A consumed prefix longer than this, and than what is left, is cut off the array. */
const TRIM_MIN = 64;

type Slots = (JobRecord | undefined)[];

function isLive(job: JobRecord | undefined): job is JobRecord {
  return job !== undefined && job.state !== State.Cancelled;
}

/**
 * Puts `job` at its place by due time, then add order, searching from the tail (where a new job
 * almost always goes: jobs join in that order, but for exact ties, see `insertInOrder` in
 * `internal/due-jobs.ts`).
 */
function insert(slots: Slots, head: number, job: JobRecord): void {
  let at = slots.length;
  while (at > head && earlierDue(job, slots[at - 1] as JobRecord)) at--;
  if (at === slots.length) slots.push(job);
  else slots.splice(at, 0, job);
}

/**
 * The due jobs of one key of a keyed FIFO queue, in due-time order: what `FifoDueJobs` does for a
 * whole queue, made small for the common key that holds a few jobs (two plain arrays, the second
 * made only when a delayed job of the key comes due). Jobs due on add and promoted jobs are kept
 * apart, each in order, and the next job is the earlier head; cancelled jobs stay as tombstones
 * until reached or compacted, as everywhere.
 *
 * @internal
 */
export class KeyFifo implements DueJobs {
  #fresh: Slots = [];
  #freshHead = 0;
  #promoted: Slots | undefined = undefined;
  #promotedHead = 0;
  #live = 0;
  #dead = 0;

  get length(): number {
    return this.#live;
  }

  pushFresh(job: JobRecord): void {
    insert(this.#fresh, this.#freshHead, job);
    this.#live++;
  }

  pushPromoted(job: JobRecord): void {
    insert((this.#promoted ??= []), this.#promotedHead, job);
    this.#live++;
  }

  shift(): JobRecord | undefined {
    if (this.#live === 0) return undefined;
    for (;;) {
      const fresh = this.#fresh[this.#freshHead];
      const promoted = this.#promoted?.[this.#promotedHead];
      let job: JobRecord;
      if (promoted === undefined || (fresh !== undefined && earlierDue(fresh, promoted))) {
        job = fresh as JobRecord;
        this.#fresh[this.#freshHead++] = undefined;
      } else {
        job = promoted;
        (this.#promoted as Slots)[this.#promotedHead++] = undefined;
      }
      if (job.state !== State.Cancelled) {
        if (--this.#live === 0) this.#clear();
        else this.#trim();
        return job;
      }
      this.#dead--;
    }
  }

  peek(): JobRecord | undefined {
    if (this.#live === 0) return undefined;
    let fresh: JobRecord | undefined;
    for (let at = this.#freshHead; at < this.#fresh.length && fresh === undefined; at++) if (isLive(this.#fresh[at])) fresh = this.#fresh[at];
    let promoted: JobRecord | undefined;
    const slots = this.#promoted ?? [];
    for (let at = this.#promotedHead; at < slots.length && promoted === undefined; at++) if (isLive(slots[at])) promoted = slots[at];
    return promoted === undefined || (fresh !== undefined && earlierDue(fresh, promoted)) ? fresh : promoted;
  }

  markRemoved(): void {
    this.#live--;
    this.#dead++;
    if (this.#live === 0) this.#clear();
    else if (this.#dead >= COMPACT_MIN && this.#dead > this.#live) {
      this.#fresh = this.#fresh.slice(this.#freshHead).filter(isLive);
      this.#freshHead = 0;
      if (this.#promoted !== undefined) this.#promoted = this.#promoted.slice(this.#promotedHead).filter(isLive);
      this.#promotedHead = 0;
      this.#dead = 0;
    }
  }

  drain(): JobRecord[] {
    const jobs = this.#fresh.slice(this.#freshHead).filter(isLive);
    if (this.#promoted !== undefined) for (const job of this.#promoted.slice(this.#promotedHead)) if (isLive(job)) jobs.push(job);
    this.#clear();
    return jobs;
  }

  /** Cuts the consumed front off an array once it is most of it: O(1) amortised per job. */
  #trim(): void {
    if (this.#freshHead > TRIM_MIN && this.#freshHead * 2 > this.#fresh.length) {
      this.#fresh = this.#fresh.slice(this.#freshHead);
      this.#freshHead = 0;
    }
    const promoted = this.#promoted;
    if (promoted !== undefined && this.#promotedHead > TRIM_MIN && this.#promotedHead * 2 > promoted.length) {
      this.#promoted = promoted.slice(this.#promotedHead);
      this.#promotedHead = 0;
    }
  }

  #clear(): void {
    this.#fresh.length = 0; // kept: a key that drains and refills reuses it
    this.#freshHead = 0;
    this.#promoted = undefined;
    this.#promotedHead = 0;
    this.#live = 0;
    this.#dead = 0;
  }
}
