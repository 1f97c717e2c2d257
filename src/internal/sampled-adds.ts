import { State, type JobRecord } from '../job.js';

/** Past this many entries read, a mostly read-out list is compacted (see {@link SampledAdds.take}). */
const COMPACT_MIN = 64;

/**
 * The add times of one source's sampled jobs (see `isSampled` in `stats.ts`) that still wait, in
 * add order: two parallel arrays read from a moving head, so the job record carries nothing for
 * the stats. Jobs mostly start in add order, and then the one starting is at the head: O(1).
 * One that starts out of order (a priority queue, a delayed job promoted after younger ones) is
 * found by a scan of the sampled entries (about one waiting job in `SAMPLE_EVERY`) and leaves a
 * hole; holes and jobs that left are dropped as the head passes them, and the arrays are
 * compacted once most of them is read, so they hold about what still waits. (A `Map` by job did
 * the same, but cost about 10% of a no-op job: its table of a few thousand entries is cold.)
 *
 * @internal
 */
export class SampledAdds {
  #jobs: (JobRecord | undefined)[] = [];
  #times: number[] = [];
  #head = 0;

  /** A sampled job joined the source at `now`. */
  add(job: JobRecord, now: number): void {
    this.#jobs.push(job);
    this.#times.push(now);
  }

  /** The add time of `job`, which is leaving the source (starting or cancelled), or `undefined`; forgets it. */
  take(job: JobRecord): number | undefined {
    const jobs = this.#jobs;
    let at = this.#head;
    if (jobs[at] !== job) {
      at = jobs.indexOf(job, at + 1);
      if (at < 0) return undefined;
    }
    const addedAt = this.#times[at];
    jobs[at] = undefined;
    this.#dropLeft();
    return addedAt;
  }

  /** The oldest entry still waiting and its add time, for `oldestDueAgeMs`: calls `visit` until it returns true. */
  scan(visit: (job: JobRecord, addedAt: number) => boolean): void {
    const jobs = this.#jobs;
    for (let i = this.#head; i < jobs.length; i++) {
      const job = jobs[i];
      if (job !== undefined && job.state < State.Running && visit(job, this.#times[i] as number)) return;
    }
  }

  /** Whether nothing is held. */
  get empty(): boolean {
    return this.#head === this.#jobs.length;
  }

  /** Drops the head entries that are holes or whose job has left (started, settled, cancelled); compacts a mostly read list. */
  #dropLeft(): void {
    const jobs = this.#jobs;
    let head = this.#head;
    for (let job = jobs[head]; head < jobs.length && (job === undefined || job.state >= State.Running); job = jobs[++head]) {
      jobs[head] = undefined;
    }
    if (head === jobs.length) {
      // Read out: start again, giving a burst's arrays back.
      if (jobs.length > COMPACT_MIN) {
        this.#jobs = [];
        this.#times = [];
      } else {
        jobs.length = 0;
        this.#times.length = 0;
      }
      head = 0;
    } else if (head > COMPACT_MIN && head > jobs.length >> 1) {
      this.#jobs = jobs.slice(head);
      this.#times = this.#times.slice(head);
      head = 0;
    }
    this.#head = head;
  }
}
