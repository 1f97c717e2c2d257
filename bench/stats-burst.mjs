#!/usr/bin/env node
// How long `stats()` blocks while a million delayed jobs are coming due (issue 13):
//
//   node bench/stats-burst.mjs [jobs=1000000] [qmux dir=..]
//
// One queue on a running worker (concurrency 16, handler `() => new Promise((resolve) =>
// setImmediate(resolve))`), `jobs` adds with one `runAt` 3 s ahead; 200 ms after it, `stats()` is
// timed three times, 300 ms apart, while the burst drains. Prints one JSON line: each call's ms and
// the due count it reported.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const jobs = Number(process.argv[2] ?? 1_000_000);
const dir = path.resolve(process.argv[3] ?? new URL('..', import.meta.url).pathname);
const { Worker } = await import(pathToFileURL(path.join(dir, 'dist/index.js')).href);
const worker = new Worker(() => new Promise((resolve) => setImmediate(resolve)), { concurrency: 16 });
const queue = worker.bindQueue({ name: 'q' });
const runAt = Date.now() + 3000;
for (let i = 0; i < jobs; i++) queue.add(i, { runAt });
if (Date.now() >= runAt) throw new Error('the adds took past the due time; use fewer jobs');
await new Promise((resolve) => setTimeout(resolve, runAt - Date.now() + 200));
const calls = [];
for (let k = 0; k < 3; k++) {
  const t = performance.now();
  const stats = worker.stats();
  calls.push({ ms: Number((performance.now() - t).toFixed(2)), due: stats.sources.q.due });
  await new Promise((resolve) => setTimeout(resolve, 300));
}
await worker.waitUntilIdle();
console.log(JSON.stringify({ ok: true, dir, jobs, calls }));
