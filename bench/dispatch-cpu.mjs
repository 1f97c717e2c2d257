#!/usr/bin/env node
// The dispatch machinery alone, in CPU time: 12 rounds of 200,000 adds to one queue of a fresh
// worker at c = 16, the best CPU ns per job of rounds 5-12.
//
//   node bench/dispatch-cpu.mjs [dist=dist] [ctx|noctx] [sync|async]
//
// `noctx sync` (a handler that returns 1, `asyncContext: false`) leaves nothing but qmux's own
// work per job: what a change to the hot path costs shows here first (NOTEBOOK.md, "One house").
// Run two builds in turns, several times each, and compare medians.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const [dir = 'dist', ctxArg = 'ctx', syncArg = 'async'] = process.argv.slice(2);
const { Worker } = await import(pathToFileURL(path.join(path.resolve(dir), 'index.js')).href);
const handler = syncArg === 'sync' ? () => 1 : () => Promise.resolve(1);

async function round() {
  const worker = new Worker(handler, { concurrency: 16, asyncContext: ctxArg !== 'noctx' });
  const queue = worker.bindQueue();
  const start = process.cpuUsage();
  for (let i = 0; i < 200_000; i++) queue.add(i);
  await worker.waitUntilIdle();
  const used = process.cpuUsage(start);
  return ((used.user + used.system) * 1000) / 200_000;
}

let best = Infinity;
for (let r = 0; r < 12; r++) {
  const ns = await round();
  if (r >= 4) best = Math.min(best, ns);
}
console.log(JSON.stringify({ dist: dir, asyncContext: ctxArg !== 'noctx', handler: syncArg, cpuNsPerJob: Math.round(best) }));
