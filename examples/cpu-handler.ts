// The thread handler of examples/threads-cpu.ts: counts the primes in [from, to) by trial
// division, a deliberately CPU-bound job. A threads worker runs this module's default export
// `(data, ctx)` in worker threads; the async half of the example imports the same function.
//
// It is TypeScript: run under tsx, qmux passes the loader on to the threads (and registers tsx's
// hooks there itself when Node cannot load a .ts file), so no build step is needed for it.

/** A range of integers, `from` included, `to` excluded. */
export interface Range {
  from: number;
  to: number;
}

/** How many primes lie in `[from, to)`. */
export default function countPrimes({ from, to }: Range): number {
  let count = 0;
  for (let n = Math.max(from, 2); n < to; n++) {
    let prime = true;
    for (let d = 2; d * d <= n; d++) {
      if (n % d === 0) {
        prime = false;
        break;
      }
    }
    if (prime) count++;
  }
  return count;
}
