import { COMPACT_MIN, earlierDue, type DueJobs } from '../due/due-jobs.js';
import { State, type CoreJob, type KeyedJob } from '../job-record.js';

function isLive(job: CoreJob): boolean {
  return job.state !== State.Cancelled;
}

/**
 * The due jobs of one key of a keyed FIFO queue, in due-time order, with the semantics of
 * `FifoDueJobs` (jobs due on add and promoted jobs in two lists, each in order, the next job
 * the earlier head; cancelled jobs left as tombstones until reached or compacted). The lists
 * run through the job records themselves (`KeyedJob.nextInKey`), and a key's state is
 * this class (`KeyState` extends it): a large keyed queue has many keys of a few jobs each, and a
 * key then costs no object for its jobs at all, where it had a queue, its first chunk and that
 * chunk's array.
 *
 * @internal
 */
export class KeyFifo implements DueJobs {
  // Two lists, each linked through `nextInKey` and in due order, as fields of their own (not two
  // list objects): a key is then one object. Jobs due on add go to the first, promoted ones to the second.
  #freshHead: KeyedJob | undefined = undefined;
  #freshTail: KeyedJob | undefined = undefined;
  #promotedHead: KeyedJob | undefined = undefined;
  #promotedTail: KeyedJob | undefined = undefined;
  #live = 0;
  #dead = 0;

  get length(): number {
    return this.#live;
  }

  pushFresh(job: CoreJob): void {
    const keyed = job as KeyedJob;
    const tail = this.#freshTail;
    if (tail === undefined) this.#freshHead = this.#freshTail = keyed;
    else if (earlierDue(keyed, tail)) this.#freshHead = insertBefore(this.#freshHead as KeyedJob, keyed);
    else {
      tail.nextInKey = keyed;
      this.#freshTail = keyed;
    }
    this.#live++;
  }

  pushPromoted(job: CoreJob): void {
    const keyed = job as KeyedJob;
    const tail = this.#promotedTail;
    if (tail === undefined) this.#promotedHead = this.#promotedTail = keyed;
    else if (earlierDue(keyed, tail)) this.#promotedHead = insertBefore(this.#promotedHead as KeyedJob, keyed);
    else {
      tail.nextInKey = keyed;
      this.#promotedTail = keyed;
    }
    this.#live++;
  }

  shift(): CoreJob | undefined {
    if (this.#live === 0) return undefined;
    for (;;) {
      const job = this.#unlinkHead();
      if (job.state !== State.Cancelled) {
        if (--this.#live === 0) this.#clear();
        return job;
      }
      this.#dead--;
    }
  }

  /** A key's own FIFO: its queue ({@link KeyedJobs}) moves every due job in at once, so this is never asked. */
  readonly needsEveryDue = false;

  wantsPromoted(): boolean {
    return true;
  }

  peek(): CoreJob | undefined {
    if (this.#live === 0) return undefined;
    for (;;) {
      const fresh = this.#freshHead;
      const promoted = this.#promotedHead;
      const job = promoted === undefined || (fresh !== undefined && earlierDue(fresh, promoted)) ? fresh : promoted;
      if ((job as KeyedJob).state !== State.Cancelled) return job;
      this.#unlinkHead();
      this.#dead--;
    }
  }

  markRemoved(): void {
    this.#live--;
    this.#dead++;
    if (this.#live === 0) this.#clear();
    else if (this.#dead >= COMPACT_MIN && this.#dead > this.#live) this.#compact();
  }

  drain(): CoreJob[] {
    const jobs: CoreJob[] = [];
    while (this.#freshHead !== undefined || this.#promotedHead !== undefined) {
      const job = this.#unlinkHead();
      if (isLive(job)) jobs.push(job);
    }
    this.#live = 0;
    this.#dead = 0;
    return jobs;
  }

  /** Unlinks and returns the earlier of the two heads (one exists). */
  #unlinkHead(): KeyedJob {
    const fresh = this.#freshHead;
    const promoted = this.#promotedHead;
    let job: KeyedJob;
    if (promoted === undefined || (fresh !== undefined && earlierDue(fresh, promoted))) {
      job = fresh as KeyedJob;
      this.#freshHead = job.nextInKey;
      if (job.nextInKey === undefined) this.#freshTail = undefined;
    } else {
      job = promoted;
      this.#promotedHead = job.nextInKey;
      if (job.nextInKey === undefined) this.#promotedTail = undefined;
    }
    job.nextInKey = undefined;
    return job;
  }

  /** Unlinks every tombstone, in one walk of each list. */
  #compact(): void {
    // The first live job before the walk unlinks the others (it is the new head either way).
    const fresh = this.#freshHead;
    this.#freshHead = firstLive(fresh);
    this.#freshTail = unlinkCancelled(fresh);
    const promoted = this.#promotedHead;
    this.#promotedHead = firstLive(promoted);
    this.#promotedTail = unlinkCancelled(promoted);
    this.#dead = 0;
  }

  /**
   * Nothing live is left: unlink the tombstones too, so that a cancelled job a user still holds
   * does not keep a chain of others alive (at most {@link COMPACT_MIN} of them, or as many as
   * there were live jobs, see `markRemoved`).
   */
  #clear(): void {
    if (this.#dead > 0) this.#compact();
    this.#live = 0;
    this.#dead = 0;
  }
}

/**
 * Puts `job` at its place in the list that starts at `head`, before its tail: an exact tie of
 * due times (a retry without backoff at the instant later jobs came due, a redrive let in as its
 * predecessor settled), as `insertInOrder` does. Returns the head. O(n), on such ties only.
 */
function insertBefore(head: KeyedJob, job: KeyedJob): KeyedJob {
  if (earlierDue(job, head)) {
    job.nextInKey = head;
    return job;
  }
  let before = head;
  while (before.nextInKey !== undefined && !earlierDue(job, before.nextInKey)) before = before.nextInKey;
  job.nextInKey = before.nextInKey;
  before.nextInKey = job;
  return head;
}

/** The first live job from `job` on. */
function firstLive(job: KeyedJob | undefined): KeyedJob | undefined {
  while (job !== undefined && !isLive(job)) job = job.nextInKey;
  return job;
}

/** Unlinks the cancelled jobs of the list that starts at `head` (each left linked to nothing); returns the new tail. */
function unlinkCancelled(head: KeyedJob | undefined): KeyedJob | undefined {
  let kept: KeyedJob | undefined;
  for (let job = head; job !== undefined; ) {
    const next = job.nextInKey;
    if (isLive(job)) {
      if (kept !== undefined) kept.nextInKey = job;
      kept = job;
    } else job.nextInKey = undefined;
    job = next;
  }
  if (kept !== undefined) kept.nextInKey = undefined;
  return kept;
}
