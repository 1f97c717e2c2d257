// Cancellation: handle.cancel(), an AbortSignal given to add, purge, and the job's own signal.
//
//   npm run build && npx tsx examples/cancellation.ts
//
// - A waiting job that is cancelled is removed from its queue; its handle settles 'cancelled' and
//   result() rejects with a CancelledError.
// - A running job that is cancelled has its `job.signal` aborted: pass it on (to fetch, to a child
//   process, to a timer) so the work really stops. The handle settles at once; the slot is freed
//   when the handler returns.
// - `add(data, { signal })` ties a job to your own AbortSignal (a request that went away, a
//   timeout). An already-aborted signal still returns a handle, which settles 'cancelled'.
// - `queue.purge()` cancels every waiting job of a queue.
import { CancelledError, Worker, type Job } from 'qmux';

/** A "download" that takes `ms` and stops as soon as the job's signal aborts. */
function download(ms: number, signal: AbortSignal): Promise<string> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => resolve('200 OK'), ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        console.log(`  (the handler saw its signal abort: ${(signal.reason as Error).name}, and stopped)`);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}

const worker = new Worker((job: Job<{ file: string; ms: number }>) => download(job.data.ms, job.signal), { concurrency: 1 });
const downloads = worker.bindQueue({ name: 'downloads' });

/** What became of a handle, as one line. */
async function outcome(handle: { id: string; status: string; result(): Promise<string> }): Promise<string> {
  try {
    const result = await handle.result();
    return `${handle.id}: ${handle.status}, result ${result}`;
  } catch (error) {
    const kind = error instanceof CancelledError ? 'CancelledError' : String(error);
    return `${handle.id}: ${handle.status}, rejected with ${kind} (${(error as Error).message})`;
  }
}

// 1. Cancel a running job and a waiting one.
const big = downloads.add({ file: 'big.iso', ms: 10_000 }, { id: 'big.iso' });
const small = downloads.add({ file: 'small.txt', ms: 10 }, { id: 'small.txt' });
const unwanted = downloads.add({ file: 'unwanted.zip', ms: 10 }, { id: 'unwanted.zip' });
await new Promise((resolve) => setTimeout(resolve, 50));
console.log(`before: big.iso ${big.status}, small.txt ${small.status}, unwanted.zip ${unwanted.status}`);
console.log(`unwanted.cancel() -> ${unwanted.cancel('user changed their mind')}`);
console.log(`big.cancel() -> ${big.cancel()}`);
console.log(`big.cancel() again -> ${big.cancel()} (already settled)`);
console.log(await outcome(unwanted));
console.log(await outcome(big));
console.log(await outcome(small));

// 2. Your own AbortSignal: the caller gives up after 30 ms.
const caller = new AbortController();
const tied = downloads.add({ file: 'report.pdf', ms: 5_000 }, { id: 'report.pdf', signal: caller.signal });
setTimeout(() => caller.abort(new Error('client disconnected')), 30);
console.log(await outcome(tied));
const late = downloads.add({ file: 'late.pdf', ms: 10 }, { id: 'late.pdf', signal: AbortSignal.abort('too late') });
console.log(await outcome(late));

// 3. purge(): cancel everything still waiting (the running one goes on).
worker.pause();
for (const file of ['a.txt', 'b.txt', 'c.txt']) downloads.add({ file, ms: 10 }, { id: file });
console.log(`purge() removed ${downloads.purge()} waiting jobs; queue length now ${downloads.length}`);
worker.resume();

await worker.waitUntilIdle();
const c = worker.stats().counters;
console.log(`counters: ${c.added} added, ${c.started} started, ${c.succeeded} succeeded, ${c.cancelled} cancelled`);
