import type { Lane } from './lane.js';

/**
 * Sources that would be eligible but for their rate window, by the time it opens: a binary
 * min-heap with the times in a typed array. Entries are not removed when a source changes: one
 * is live while `source.rateHeldAt` equals its time, and a stale one is dropped when it comes
 * out. A source has at most one live entry.
 *
 * @internal
 */
export class RateHeld {
  #sources: Lane[] = [];
  #times = new Float64Array(16);

  get length(): number {
    return this.#sources.length;
  }

  /** The earliest time held, or `Infinity`. */
  nextAt(): number {
    return this.#sources.length === 0 ? Infinity : (this.#times[0] as number);
  }

  /** Holds `source` until `at`. */
  hold(source: Lane, at: number): void {
    source.rateHeldAt = at;
    const sources = this.#sources;
    let i = sources.length;
    if (i === this.#times.length) {
      const grown = new Float64Array(i * 2);
      grown.set(this.#times);
      this.#times = grown;
    }
    const times = this.#times;
    sources.push(source);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if ((times[parent] as number) <= at) break;
      sources[i] = sources[parent] as Lane;
      times[i] = times[parent] as number;
      i = parent;
    }
    sources[i] = source;
    times[i] = at;
  }

  /** Takes out the earliest entry if it is due at `now` and live; returns its source, or `undefined` when none is due. */
  popDue(now: number): Lane | null | undefined {
    const sources = this.#sources;
    if (sources.length === 0 || (this.#times[0] as number) > now) return undefined;
    const times = this.#times;
    const top = sources[0] as Lane;
    const at = times[0] as number;
    const last = sources.pop() as Lane;
    const n = sources.length;
    if (n > 0) {
      const lastAt = times[n] as number;
      let i = 0;
      for (;;) {
        let child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && (times[child + 1] as number) < (times[child] as number)) child++;
        if ((times[child] as number) >= lastAt) break;
        sources[i] = sources[child] as Lane;
        times[i] = times[child] as number;
        i = child;
      }
      sources[i] = last;
      times[i] = lastAt;
    }
    if (top.rateHeldAt !== at) return null; // stale: the source changed since
    top.rateHeldAt = Number.NaN;
    return top;
  }
}
