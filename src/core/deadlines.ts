import type { CoreJob } from './job-record.js';

/**
 * The deadline of one running attempt that has a timeout. Made only for jobs with a `timeout`
 * (the user asked for it), so a job without one pays nothing for the feature.
 *
 * @internal
 */
export class Deadline {
  /** When the attempt times out, on the core's clock. */
  readonly at: number;
  readonly job: CoreJob;
  /** The timeout in ms, for the error message. */
  readonly ms: number;
  /** Position in the heap, or -1 once removed. */
  index = -1;
  constructor(at: number, job: CoreJob, ms: number) {
    this.at = at;
    this.job = job;
    this.ms = ms;
  }
}

/**
 * Job timeouts as data (quinn-proto's timer table): an indexed min-heap of the running attempts'
 * deadlines. The earliest is folded into the core's one `wakeAt`; an attempt that settles first
 * leaves the heap in O(log n), so nothing (no tombstone, no job) is left behind.
 *
 * @internal
 */
export class Deadlines {
  #items: Deadline[] = [];

  get length(): number {
    return this.#items.length;
  }

  /** The earliest deadline, or `Infinity`. */
  nextAt(): number {
    return this.#items.length === 0 ? Infinity : (this.#items[0] as Deadline).at;
  }

  /** The earliest deadline if it has passed at `now`, without removing it. */
  expired(now: number): Deadline | undefined {
    const top = this.#items[0];
    return top !== undefined && top.at <= now ? top : undefined;
  }

  add(deadline: Deadline): void {
    const items = this.#items;
    deadline.index = items.length;
    items.push(deadline);
    this.#up(deadline.index);
  }

  remove(deadline: Deadline): void {
    const items = this.#items;
    const at = deadline.index;
    if (at < 0) return;
    deadline.index = -1;
    const last = items.pop() as Deadline;
    if (last !== deadline) {
      items[at] = last;
      last.index = at;
      this.#up(at);
      this.#down(last.index);
    }
    if (items.length === 0) this.#items = []; // give the peak's capacity back
  }

  #up(i: number): void {
    const items = this.#items;
    const item = items[i] as Deadline;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const up = items[parent] as Deadline;
      if (up.at <= item.at) break;
      items[i] = up;
      up.index = i;
      i = parent;
    }
    items[i] = item;
    item.index = i;
  }

  #down(i: number): void {
    const items = this.#items;
    const n = items.length;
    const item = items[i] as Deadline;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= n) break;
      const right = child + 1;
      if (right < n && (items[right] as Deadline).at < (items[child] as Deadline).at) child = right;
      const down = items[child] as Deadline;
      if (down.at >= item.at) break;
      items[i] = down;
      down.index = i;
      i = child;
    }
    items[i] = item;
    item.index = i;
  }
}
