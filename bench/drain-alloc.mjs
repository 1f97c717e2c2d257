#!/usr/bin/env node
// What one job allocates while a burst of delayed jobs drains (issue 13), in a fresh process:
//
//   node --expose-gc --max-semi-space-size=512 --min-semi-space-size=512 bench/drain-alloc.mjs \
//     [jobs=100000] [qmux dir=..] [fifo|priority|keyed|floor] [immediate|void]
//
// The same burst as bench/due-burst.mjs (concurrency 16, every job due at once, the same two
// handlers), smaller, in a young generation big enough that nothing is collected while it drains:
// heapUsed after the drain minus heapUsed at the due time, per job, is then everything allocated
// for the job from its promotion to its settling (the handler's promise and setImmediate's record
// included). `floor` is due-burst's `floor` dispatcher in miniature (records made up front, 16
// lanes with their callbacks made once, the result kept on the record). The difference between a
// qmux cell and `floor` is what qmux itself allocates per job on that path: the young generation
// fills that much faster, so a burst takes that many more scavenges, each about as long as the
// floor's (they copy the same kept results). Prints one JSON line; it refuses to print if a
// scavenge ran in the window (raise the semi-space flags).
import path from 'node:path';
import { PerformanceObserver, constants } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';

const jobs = Number(process.argv[2] ?? 100_000);
const dir = path.resolve(process.argv[3] ?? new URL('..', import.meta.url).pathname);
const kind = process.argv[4] ?? 'fifo';
const handlerName = process.argv[5] ?? 'immediate';
const handlers = {
  immediate: () => new Promise(setImmediate),
  void: () => new Promise((resolve) => setImmediate(resolve)),
};
const handler = handlers[handlerName];
if (handler === undefined) throw new Error(`handler must be one of ${Object.keys(handlers).join(', ')}, got ${handlerName}`);
if (globalThis.gc === undefined) throw new Error('run with --expose-gc');
const kinds = ['fifo', 'priority', 'keyed', 'floor'];
if (!kinds.includes(kind)) throw new Error(`queue must be one of ${kinds.join(', ')}, got ${kind}`);

const { Worker } = await import(pathToFileURL(path.join(dir, 'dist/index.js')).href);

/** Binds the queue under test; returns its add(i, runAt). */
function bind(worker) {
  if (kind === 'priority') {
    const q = worker.bindPriorityQueue();
    return (i, runAt) => q.add(i, i % 10, { runAt });
  }
  const q = kind === 'keyed' ? worker.bindQueue({ keys: { by: (i) => i % 100 } }) : worker.bindQueue();
  return (i, runAt) => q.add(i, { runAt });
}

/** due-burst's floor in miniature: a lane takes the next record, runs it, keeps its result. */
function floorDrain(records) {
  let next = 0;
  let running = 0;
  return new Promise((resolve) => {
    class Lane {
      constructor() {
        this.record = undefined;
        this.settle = (value) => {
          this.record.value = value;
          this.record.done = true;
          running--;
          this.take();
        };
      }
      take() {
        if (next < records.length) {
          this.record = records[next++];
          running++;
          handler(this.record).then(this.settle, this.settle);
        } else if (running === 0) resolve();
      }
    }
    for (let i = 0; i < 16; i++) new Lane().take();
  });
}

let scavenges = 0;
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) if (entry.detail?.kind === constants.NODE_PERFORMANCE_GC_MINOR) scavenges++;
}).observe({ entryTypes: ['gc'] });

async function burst(n) {
  const runAt = Date.now() + 200;
  let records;
  let worker;
  if (kind === 'floor') {
    records = Array.from({ length: n }, (_, i) => ({ data: i, value: undefined, done: false }));
  } else {
    worker = new Worker(handler, { concurrency: 16 });
    const add = bind(worker);
    // The handles are dropped, as due-burst drops them; the records live on in the queue.
    for (let i = 0; i < n; i++) add(i, runAt);
  }
  gc();
  gc();
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, runAt - Date.now() - 20)));
  // Let the observer's entries for the gc() calls above arrive before counting.
  await new Promise((resolve) => setImmediate(resolve));
  const scavengesBefore = scavenges;
  const before = process.memoryUsage().heapUsed;
  if (kind === 'floor') await floorDrain(records);
  else await worker.waitUntilIdle();
  const after = process.memoryUsage().heapUsed;
  await new Promise((resolve) => setImmediate(resolve));
  return { bytesPerJob: (after - before) / n, scavenges: scavenges - scavengesBefore };
}

await burst(Math.min(jobs, 20_000));
const result = await burst(jobs);
if (result.scavenges !== 0) {
  throw new Error(`${result.scavenges} scavenge(s) ran while the burst drained: raise --max-semi-space-size / --min-semi-space-size`);
}
console.log(
  JSON.stringify({
    ok: true,
    dir,
    node: process.version,
    queue: kind,
    handler: handlerName,
    jobs,
    bytesPerJob: Number(result.bytesPerJob.toFixed(1)),
  }),
);
