#!/usr/bin/env node
// One cell of the "delayed jobs coming due at once" measurement (issue 13), in a fresh process:
//
//   node --expose-gc bench/due-burst.mjs [jobs=1000000] [qmux dir=..] [handler=immediate] [queue=fifo|priority|keyed|floor|floor-drop]
//
// `jobs` jobs are added to one queue of a running worker (concurrency 16; a job yields to the
// event loop, or the whole drain would be one macrotask of microtasks and the loop would block
// for all of it, promotion or not), all with the same `runAt`, 1.5 s + the time the adds take after the first add
// (the adds are timed in a warm-up run first), so every one of them comes due at the same instant.
// Measured: heap + ArrayBuffer bytes per delayed job (after gc(), minus the empty queue's), the
// longest event-loop block from their due time until the worker is idle
// (perf_hooks.monitorEventLoopDelay at 1 ms resolution: its max minus the 1 ms period), and the
// total time from the due time until `waitUntilIdle()` resolves, and from the due time until
// the first job starts (`firstStartMs`), and the five longest callbacks over 4 ms
// (`slowCallbacks`: which of qmux's turns they were). Prints one JSON line.
//
// Handlers: `immediate` (the default), `() => new Promise(setImmediate)`, which resolves each job
// with its promise's own `reject` function (setImmediate passes its second argument on): a fresh
// object per job, which the job keeps as its result (`handle.result()` may be asked for later),
// so every result survives a scavenge through the job's record in the old generation, and the
// scavenges take 11-30 ms (see bench/RESULTS.md, issue 13); `void`, `() => new Promise((resolve)
// => setImmediate(resolve))`, which resolves with `undefined`: what is left is qmux's own work.
//
// Queues: `fifo` (the default), `bindQueue()`; `priority`, `bindPriorityQueue()` with job i at
// priority i % 10; `keyed`, `bindQueue({ keys: { by: (i) => i % 100 } })`; and two floors that are
// not qmux, `floor` and `floor-drop` (see `FloorDispatcher`). A priority or keyed
// queue needs every due job in order before it gives one: the burst moves in batches while the
// starts wait (see `Promotion.orderBacklog`).
//
// The qmux directory defaults to this checkout (its dist/ must be built: `npm run build`); pass
// another checkout's directory to measure an older build with the same script.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const jobs = Number(process.argv[2] ?? 1_000_000);
const dir = path.resolve(process.argv[3] ?? new URL('..', import.meta.url).pathname);
const handlerName = process.argv[4] ?? 'immediate';
const handlers = {
  immediate: () => new Promise(setImmediate),
  void: () => new Promise((resolve) => setImmediate(resolve)),
};
const handler = handlers[handlerName];
if (handler === undefined) throw new Error(`handler must be one of ${Object.keys(handlers).join(', ')}, got ${handlerName}`);
const queueKind = process.argv[5] ?? 'fifo';
const queues = {
  fifo: (worker) => {
    const q = worker.bindQueue();
    return (i, runAt) => q.add(i, { runAt });
  },
  priority: (worker) => {
    const q = worker.bindPriorityQueue();
    return (i, runAt) => q.add(i, i % 10, { runAt });
  },
  keyed: (worker) => {
    const q = worker.bindQueue({ keys: { by: (i) => i % 100 } });
    return (i, runAt) => q.add(i, { runAt });
  },
};
// Floors: not qmux, the least a dispatcher of delayed jobs with a handle per job can do, on the
// same burst: one array of records in due order, one timer for the first due time, 16 lanes that
// each take the next record, run the handler and, on its settling, go on. `floor` keeps what the
// handler resolved with on the record, as a handle that can give its result later must (the
// records are what `add` returns, and the bench drops them, as it drops qmux's handles);
// `floor-drop` does not keep it. What `floor` blocks beyond `floor-drop` is the garbage
// collector's price of keeping results, whoever dispatches.
class FloorDispatcher {
  constructor(handler, concurrency, keep) {
    this.handler = handler;
    this.keep = keep;
    this.records = [];
    this.next = 0;
    this.running = 0;
    this.timer = undefined;
    this.idle = undefined;
    // One lane per slot, its callbacks made once (as qmux reuses its awaiters): no closure per job.
    this.lanes = Array.from({ length: concurrency }, () => new FloorLane(this));
  }
  add(data, runAt) {
    const record = { data, value: undefined, done: false };
    this.records.push(record);
    if (this.timer === undefined) this.timer = setTimeout(() => this.fill(), Math.max(0, runAt - Date.now()));
    return record;
  }
  fill() {
    while (this.running < this.lanes.length && this.next < this.records.length) {
      const record = this.records[this.next];
      this.records[this.next++] = undefined;
      const lane = this.lanes[this.running++];
      lane.record = record;
      this.handler(record).then(lane.settle, lane.settle);
    }
    if (this.running === 0 && this.next === this.records.length && this.idle !== undefined) this.idle();
  }
  settled(lane, value) {
    const record = lane.record;
    lane.record = undefined;
    if (this.keep) record.value = value;
    record.done = true;
    // The lane goes back to the free end of the list (lanes past `running` are free).
    const last = this.lanes[--this.running];
    const at = this.lanes.indexOf(lane);
    this.lanes[at] = last;
    this.lanes[this.running] = lane;
    this.fill();
  }
  waitUntilIdle() {
    if (this.running === 0 && this.next === this.records.length) return Promise.resolve();
    return new Promise((resolve) => {
      this.idle = resolve;
    });
  }
}
class FloorLane {
  constructor(dispatcher) {
    this.record = undefined;
    this.settle = (value) => dispatcher.settled(this, value);
  }
}
const floors = { floor: true, 'floor-drop': false };
const bindQueue = Object.hasOwn(queues, queueKind) ? queues[queueKind] : undefined;
if (bindQueue === undefined && !Object.hasOwn(floors, queueKind)) {
  throw new Error(`queue must be one of ${[...Object.keys(queues), ...Object.keys(floors)].join(', ')}, got ${queueKind}`);
}
// The longest synchronous run of one timer or immediate callback (qmux's wake-up pass and its
// promotion turns among them; the microtasks after a callback are not in it): what the
// promotion itself blocks, apart from GC and the handlers' promise reactions.
let longestCallbackMs = 0;
// The callbacks that ran over SLOW_MS, longest first in the output (`slowCallbacks`): which of
// qmux's turns blocked (the wake-up timer, a promotion continuation), and for how long.
const SLOW_MS = 4;
let slowCallbacks = [];
const timed = (fn) =>
  function (...args) {
    const t = performance.now();
    try {
      return fn.apply(this, args);
    } finally {
      const ms = performance.now() - t;
      longestCallbackMs = Math.max(longestCallbackMs, ms);
      if (ms > SLOW_MS) slowCallbacks.push({ ms: Number(ms.toFixed(1)), fn: fn.name || String(fn).replace(/\s+/g, ' ').slice(0, 60) });
    }
  };
const realImmediate = globalThis.setImmediate;
const realTimeout = globalThis.setTimeout;
globalThis.setImmediate = (fn, ...args) => realImmediate(timed(fn), ...args);
globalThis.setTimeout = (fn, ms, ...args) => realTimeout(timed(fn), ms, ...args);
const { Worker } = await import(pathToFileURL(path.join(dir, 'dist/index.js')).href);
const gc = globalThis.gc ?? (() => {});
const mem = () => {
  gc();
  gc();
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};

async function burst(n, measure) {
  let ran = 0;
  /** When the first job started (monotonic ms): a priority or keyed queue orders the burst first. */
  let firstStartAt = Number.NaN;
  const run = (job) => {
    if (ran++ === 0) firstStartAt = performance.now();
    return handler(job);
  };
  let worker;
  let add;
  if (Object.hasOwn(floors, queueKind)) {
    worker = new FloorDispatcher(run, 16, floors[queueKind]);
    add = (i, runAt) => worker.add(i, runAt);
  } else {
    worker = new Worker(run, { concurrency: 16 });
    add = bindQueue(worker);
  }
  const before = measure ? mem() : 0;
  // Adding takes a while: aim the due time past the end of the adds (addMs from the warm-up).
  const addStart = Date.now();
  const runAt = addStart + burst.addMs * (n / burst.warmN) * 1.5 + 1500;
  for (let i = 0; i < n; i++) add(i, runAt);
  const addMs = Date.now() - addStart;
  const bytesPerJob = measure ? (mem() - before) / n : 0;
  if (Date.now() >= runAt) throw new Error(`the adds took ${addMs} ms, past the due time; raise the margin`);
  if (ran !== 0) throw new Error('a job ran before its due time');
  // Wait for the due time with a timer of our own, then watch the loop until the worker is idle.
  await new Promise((resolve) => setTimeout(resolve, Math.max(0, runAt - Date.now() - 50)));
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  histogram.enable();
  longestCallbackMs = 0;
  slowCallbacks = [];
  let longestGap = 0;
  // The process's CPU time over the longest gap: far below the gap, the process was not running
  // (another process had the core), and the gap is the machine's, not the loop's.
  let longestGapCpu = 0;
  let last = performance.now();
  let lastCpu = process.cpuUsage();
  const ticker = setInterval(() => {
    const t = performance.now();
    if (t - last > longestGap) {
      const cpu = process.cpuUsage(lastCpu);
      longestGap = t - last;
      longestGapCpu = (cpu.user + cpu.system) / 1000;
    }
    last = t;
    lastCpu = process.cpuUsage();
  }, 1);
  // The due time on the monotonic clock: the worker's own wake-up may come first, so the loop is
  // watched from before it, and the total time runs from the due time itself.
  const dueAt = runAt - performance.timeOrigin;
  while (Date.now() < runAt) await new Promise((resolve) => setImmediate(resolve));
  await worker.waitUntilIdle();
  const drainMs = performance.now() - dueAt;
  clearInterval(ticker);
  histogram.disable();
  longestGap = Math.max(longestGap, performance.now() - last);
  if (ran !== n) throw new Error(`ran ${ran} of ${n} jobs`);
  return {
    jobs: n,
    addMs,
    bytesPerJob,
    drainMs,
    // The histogram records how late each 1 ms check ran: max - 1 ms is the longest block.
    maxBlockMs: histogram.max / 1e6 - 1,
    p99BlockMs: histogram.percentile(99) / 1e6 - 1,
    longestTickGapMs: longestGap,
    longestTickGapCpuMs: longestGapCpu,
    longestCallbackMs,
    slowCallbacks: slowCallbacks.sort((a, b) => b.ms - a.ms).slice(0, 5),
    firstStartMs: firstStartAt - dueAt,
  };
}

// Warm-up: the same path on a small burst (also times the adds, to place the due time).
burst.warmN = Math.min(jobs, 20_000);
burst.addMs = 20;
const warm = await burst(burst.warmN, false);
burst.addMs = Math.max(1, warm.addMs);
const result = await burst(jobs, true);
console.log(JSON.stringify({ ok: true, dir, node: process.version, handler: handlerName, queue: queueKind, ...result }));
