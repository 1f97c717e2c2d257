#!/usr/bin/env node
// The longest event-loop block while a million delayed jobs come due under a strategy that reads
// every source's length at each pick (MaxLen), issue 13:
//
//   node bench/maxlen-burst.mjs [jobs=1000000] [qmux dir=..]
//
// Two queues on a running worker (concurrency 16, Strategy.MaxLen, handler `() => new
// Promise((resolve) => setImmediate(resolve))`): `a` gets `jobs` adds with one `runAt` 3 s ahead,
// `b` 1000 jobs delayed 2-3 s. From 50 ms before the due time until the worker is idle, the loop
// is watched (perf_hooks.monitorEventLoopDelay at 1 ms: its max minus the 1 ms period is the
// longest block). Prints one JSON line.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const jobs = Number(process.argv[2] ?? 1_000_000);
const dir = path.resolve(process.argv[3] ?? new URL('..', import.meta.url).pathname);
const { Worker, Strategy } = await import(pathToFileURL(path.join(dir, 'dist/index.js')).href);
const worker = new Worker(() => new Promise((resolve) => setImmediate(resolve)), { concurrency: 16, strategy: Strategy.MaxLen });
const a = worker.bindQueue({ name: 'a' });
const b = worker.bindQueue({ name: 'b' });
const runAt = Date.now() + 3000;
for (let i = 0; i < jobs; i++) a.add(i, { runAt });
for (let i = 0; i < 1000; i++) b.add(i, { delay: 2000 + i });
if (Date.now() >= runAt - 50) throw new Error('the adds took past the due time; use fewer jobs');
await new Promise((resolve) => setTimeout(resolve, runAt - Date.now() - 50));
const histogram = monitorEventLoopDelay({ resolution: 1 });
histogram.enable();
const start = performance.now();
await worker.waitUntilIdle();
histogram.disable();
console.log(
  JSON.stringify({
    ok: true,
    dir,
    jobs,
    maxBlockMs: Number((histogram.max / 1e6 - 1).toFixed(1)),
    p99BlockMs: Number((histogram.percentile(99) / 1e6 - 1).toFixed(1)),
    drainMs: Math.round(performance.now() - start),
  }),
);
