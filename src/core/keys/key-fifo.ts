import { ChunkedQueue } from '../../internal/chunked-queue.js';
import { COMPACT_MIN, earlierDue, insertInOrder, type DueJobs } from '../../internal/due-jobs.js';
import { State, type JobRecord } from '../../job.js';

function isLive(job: JobRecord): boolean {
  return job.state !== State.Cancelled;
}

/**
 * The due jobs of one key of a keyed FIFO queue, in due-time order: `FifoDueJobs` (jobs due on
 * add and promoted jobs in two queues, each in order, the next job the earlier head; cancelled
 * jobs left as tombstones until reached or compacted), with both queues made on first use and
 * dropped when the key drains. Most keys of a large keyed queue hold a few jobs and never a
 * promoted one, so a key costs one small queue, not two; a key with a large backlog still gets
 * the chunked queue's O(1) operations without copying as it grows.
 *
 * @internal
 */
export class KeyFifo implements DueJobs {
  #fresh: ChunkedQueue<JobRecord> | undefined = undefined;
  #promoted: ChunkedQueue<JobRecord> | undefined = undefined;
  /** The jobs pushed last into each queue: a new one almost always goes after them. */
  #freshTail: JobRecord | undefined = undefined;
  #promotedTail: JobRecord | undefined = undefined;
  #live = 0;
  #dead = 0;

  get length(): number {
    return this.#live;
  }

  pushFresh(job: JobRecord): void {
    const queue = (this.#fresh ??= new ChunkedQueue<JobRecord>());
    const tail = this.#freshTail;
    // Only a job due before the tail (exact ties of due times, see `insertInOrder`) goes elsewhere.
    if (tail !== undefined && queue.length > 0 && earlierDue(job, tail)) this.#freshTail = insertInOrder(queue, job);
    else {
      queue.push(job);
      this.#freshTail = job;
    }
    this.#live++;
  }

  pushPromoted(job: JobRecord): void {
    const queue = (this.#promoted ??= new ChunkedQueue<JobRecord>());
    const tail = this.#promotedTail;
    if (tail !== undefined && queue.length > 0 && earlierDue(job, tail)) this.#promotedTail = insertInOrder(queue, job);
    else {
      queue.push(job);
      this.#promotedTail = job;
    }
    this.#live++;
  }

  shift(): JobRecord | undefined {
    if (this.#live === 0) return undefined;
    for (;;) {
      const fresh = this.#fresh?.peek();
      const promoted = this.#promoted?.peek();
      const fromFresh = promoted === undefined || (fresh !== undefined && earlierDue(fresh, promoted));
      const job = (fromFresh ? (this.#fresh as ChunkedQueue<JobRecord>) : (this.#promoted as ChunkedQueue<JobRecord>)).shift() as JobRecord;
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

  peek(): JobRecord | undefined {
    if (this.#live === 0) return undefined;
    for (const queue of [this.#fresh, this.#promoted]) {
      while (queue !== undefined && queue.peek()?.state === State.Cancelled) {
        queue.shift();
        this.#dead--;
      }
    }
    const fresh = this.#fresh?.peek();
    const promoted = this.#promoted?.peek();
    return promoted === undefined || (fresh !== undefined && earlierDue(fresh, promoted)) ? fresh : promoted;
  }

  markRemoved(): void {
    this.#live--;
    this.#dead++;
    if (this.#live === 0) this.#clear();
    else if (this.#dead >= COMPACT_MIN && this.#dead > this.#live) {
      this.#fresh?.filterInPlace(isLive);
      this.#promoted?.filterInPlace(isLive);
      this.#dead = 0;
    }
  }

  drain(): JobRecord[] {
    const jobs: JobRecord[] = [];
    for (const queue of [this.#fresh, this.#promoted]) {
      if (queue === undefined) continue;
      for (let job = queue.shift(); job !== undefined; job = queue.shift()) if (isLive(job)) jobs.push(job);
    }
    this.#clear();
    return jobs;
  }

  /** Nothing live is left: keep nothing (a key that drains often holds its memory no longer). */
  #clear(): void {
    this.#fresh = undefined;
    this.#promoted = undefined;
    this.#freshTail = undefined;
    this.#promotedTail = undefined;
    this.#live = 0;
    this.#dead = 0;
  }
}
