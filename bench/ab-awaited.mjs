#!/usr/bin/env node
// A/B of two qmux builds on the awaited-results cell, one fresh process per run, builds alternated:
//
//   node bench/ab-awaited.mjs <distA> <distB> [runs=11] [concurrency=16]
//
// A run is the `result` cell of bench/cell.mjs: a fresh worker, 200,000 adds of
// `() => Promise.resolve()`, every handle's `result()` asked for, then `Promise.all` of them (two
// warm-up passes of 20,000 jobs first). It prints wall and CPU ns/job. Each side then gets the
// median of its runs, and the bytes one `result()` keeps alive while its job waits (200,000 handles
// of a paused worker, heap after gc() before and after asking for their results).
//
// Why fresh processes, not bench/ab-inprocess.mjs: what this cell costs is mostly the young
// generation copying what every waiting job holds, and two builds in one process share one heap.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const [mode, ...args] = process.argv.slice(2);

async function load(dist) {
  return import(pathToFileURL(path.join(path.resolve(dist), 'index.js')).href);
}

if (mode === '--cell') {
  const [dist, c] = args;
  const { Worker } = await load(dist);
  const job = () => Promise.resolve();
  const once = async (n) => {
    const w = new Worker(job, { concurrency: Number(c) });
    const q = w.bindQueue();
    const t0 = performance.now();
    const u0 = process.cpuUsage();
    const handles = [];
    for (let i = 0; i < n; i++) handles.push(q.add(i));
    await Promise.all(handles.map((h) => h.result()));
    const u = process.cpuUsage(u0);
    return [((performance.now() - t0) * 1e6) / n, ((u.user + u.system) * 1000) / n];
  };
  await once(20_000);
  await once(20_000);
  globalThis.gc();
  process.stdout.write(`${(await once(200_000)).join(' ')}\n`);
} else if (mode === '--memory') {
  const [dist] = args;
  const { Worker } = await load(dist);
  const w = new Worker(() => Promise.resolve(), { concurrency: 16 });
  w.pause();
  const q = w.bindQueue();
  const n = 200_000;
  const handles = new Array(n);
  for (let i = 0; i < n; i++) handles[i] = q.add(i);
  globalThis.gc();
  const before = process.memoryUsage().heapUsed;
  const results = handles.map((h) => h.result());
  globalThis.gc();
  const after = process.memoryUsage().heapUsed;
  process.stdout.write(`${(after - before) / n - 8}\n`); // less the results array's own slot
  w.resume();
  await Promise.all(results);
} else {
  const [distA, distB] = [mode, args[0]];
  if (distA === undefined || distB === undefined) {
    process.stderr.write('usage: node bench/ab-awaited.mjs <distA> <distB> [runs=11] [concurrency=16]\n');
    process.exit(2);
  }
  const runs = Number(args[1] ?? 11);
  const concurrency = args[2] ?? '16';
  const self = fileURLToPath(import.meta.url);
  const node = (...argv) => execFileSync(process.execPath, ['--expose-gc', self, ...argv], { encoding: 'utf8' }).trim();
  const sides = { A: { dist: distA, wall: [], cpu: [] }, B: { dist: distB, wall: [], cpu: [] } };
  for (let r = 0; r < runs; r++) {
    for (const side of Object.values(sides)) {
      const [wall, cpu] = node('--cell', side.dist, concurrency).split(' ').map(Number);
      side.wall.push(wall);
      side.cpu.push(cpu);
    }
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  const out = {};
  for (const [name, side] of Object.entries(sides)) {
    out[name] = {
      dist: side.dist,
      wallNsPerJob: Math.round(median(side.wall)),
      cpuNsPerJob: Math.round(median(side.cpu)),
      bytesPerResult: Math.round(Number(node('--memory', side.dist))),
    };
  }
  out.wallRatioBoverA = Number((out.B.wallNsPerJob / out.A.wallNsPerJob).toFixed(3));
  out.cpuRatioBoverA = Number((out.B.cpuNsPerJob / out.A.cpuNsPerJob).toFixed(3));
  console.log(JSON.stringify({ runs, concurrency: Number(concurrency), ...out }));
}
