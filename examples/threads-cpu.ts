// CPU-bound jobs: the same prime counting on an async worker and on a threads worker.
//
//   npm run build && npx tsx examples/threads-cpu.ts
//
// An async worker runs every handler on the main thread: a handler that computes never awaits, so
// however high `concurrency` is, the jobs run one after another on one core. A threads worker
// runs the default export of a module (here ./cpu-handler.ts) in worker threads, one job per
// thread, so the same jobs spread over every core. Job data goes to the thread by structured
// clone and the result comes back the same way; the strategy still picks which job runs next.
//
// Prints the total (the same both ways), both timings and the speed-up. Starting the threads and
// loading the handler in them costs a few hundred ms once (more for a .ts handler under tsx);
// it is timed apart, since a long-lived worker pays it only at its first jobs. On an idle 2-core
// machine expect a speed-up a little under 2x; other busy processes share the cores and shrink it.
import { availableParallelism } from 'node:os';
import { Worker, type Job } from 'qmux';
import countPrimes, { type Range } from './cpu-handler.js';

const LIMIT = 5_000_000;
const JOBS = 16;
const cores = availableParallelism();

/** [0, LIMIT) cut into JOBS ranges (the later ones cost more: larger numbers, more divisors to try). */
const ranges: Range[] = Array.from({ length: JOBS }, (_, i) => ({
  from: Math.floor((LIMIT * i) / JOBS),
  to: Math.floor((LIMIT * (i + 1)) / JOBS),
}));

/** Runs `jobs` on `worker` and returns the sum of the results and the time taken. */
async function timed(worker: Worker<Range, number>, jobs: Range[]): Promise<{ primes: number; ms: number }> {
  const started = performance.now();
  const results = await worker.bindQueue().addAll(jobs).result();
  return { primes: results.reduce((sum, n) => sum + n, 0), ms: performance.now() - started };
}

console.log(`Counting the primes below ${LIMIT.toLocaleString('en')} in ${JOBS} jobs, on ${cores} core(s).`);

// Main thread: concurrency does not help a handler that never awaits.
const onMainThread = new Worker((job: Job<Range>) => countPrimes(job.data), { concurrency: cores });
const asyncRun = await timed(onMainThread, ranges);
await onMainThread.stop();
console.log(`async worker,   concurrency ${cores}: ${asyncRun.primes} primes in ${asyncRun.ms.toFixed(0)} ms`);

// Worker threads: one thread per core (`concurrency` defaults to os.availableParallelism()).
const inThreads = new Worker<Range, number>(new URL('./cpu-handler.ts', import.meta.url), { concurrency: cores });
// One tiny job per thread starts them all and loads the handler in each.
const warmUp = await timed(
  inThreads,
  Array.from({ length: cores }, () => ({ from: 0, to: 1 })),
);
const threadsRun = await timed(inThreads, ranges);
await inThreads.stop(); // releases the threads
console.log(
  `threads worker, ${cores} threads:     ${threadsRun.primes} primes in ${threadsRun.ms.toFixed(0)} ms (+ ${warmUp.ms.toFixed(0)} ms to start the threads)`,
);

if (threadsRun.primes !== asyncRun.primes) throw new Error('the two runs disagree');
console.log(`speed-up: ${(asyncRun.ms / threadsRun.ms).toFixed(2)}x (${(asyncRun.ms / (threadsRun.ms + warmUp.ms)).toFixed(2)}x counting the start)`);
