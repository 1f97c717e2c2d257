// One measurement cell. run.mjs starts a fresh process per cell:
//
//   node --expose-gc bench/cell.mjs '{"workload":"noop","variant":"qmux","jobs":200000,"concurrency":16}'
//
// The cell warms up (same code path, smaller job count, twice), collects garbage, measures once,
// and prints exactly one JSON line on stdout: {"ok":true,...} or {"ok":false,"error":"..."}.
// Libraries are imported lazily, so a missing or broken qmux only fails the qmux cells.

import { existsSync, writeSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const spec = JSON.parse(process.argv[2] ?? '{}');
const QMUX_URL = new URL('../dist/index.js', import.meta.url);

// ---------------------------------------------------------------------------------------------
// Output: exactly one JSON line, even if the event loop empties with a promise still pending.

let printed = false;
function emit(obj) {
  if (printed) return;
  printed = true;
  writeSync(1, JSON.stringify(obj) + '\n');
}
process.on('exit', () => {
  emit({
    ok: false,
    error: 'event loop emptied before the completion promise settled (an idle/drain/result promise that never resolves?)',
  });
});
const unhandled = [];
process.on('unhandledRejection', (reason) => {
  unhandled.push(
    String(reason?.stack ?? reason)
      .split('\n')
      .slice(0, 2)
      .join(' | '),
  );
});

// ---------------------------------------------------------------------------------------------
// Helpers

if (typeof globalThis.gc !== 'function') {
  emit({ ok: false, error: 'run with --expose-gc' });
  process.exit(1);
}
const now = () => process.hrtime.bigint();
const elapsed = (t0) => Number(process.hrtime.bigint() - t0);
function fullGc() {
  globalThis.gc();
  globalThis.gc();
}
function heapUsed() {
  fullGc();
  return process.memoryUsage().heapUsed;
}
const timeouts = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;
const noopCb = () => {};

// The job. Every library runs this same function (or, for callback APIs, the same work followed
// by a callback on the next microtask), so the per-job work is identical. The counter lets the
// cell check that every job really ran before the library's "drained" signal fired.
let ran = 0;
const job = () => {
  ran++;
  return Promise.resolve();
};
// Callback-style worker (fastq callback API, async.queue): same async no-op semantics as `job`:
// the callback fires on a later microtask, not synchronously.
const cbWorker = (_arg, cb) => {
  ran++;
  void Promise.resolve().then(() => cb(null));
};

async function loadQmux() {
  if (!existsSync(fileURLToPath(QMUX_URL))) {
    throw new Error('qmux is not built: dist/index.js is missing (npm run build)');
  }
  return import(QMUX_URL.href);
}
const loadFastq = async () => (await import('fastq')).default;
const loadPQueue = async () => (await import('p-queue')).default;
const loadPLimit = async () => (await import('p-limit')).default;
const loadAsync = async () => (await import('async')).default;

// p-limit has no idle signal. Its queue is FIFO, so wait for the last call's promise, then for
// the active and pending counts to reach zero.
async function pLimitIdle(limit, last) {
  await last;
  while (limit.activeCount > 0 || limit.pendingCount > 0) await new Promise(setImmediate);
}

// ---------------------------------------------------------------------------------------------
// Throughput implementations: (n, c) => elapsed ns. Setup (constructing the queue) is outside
// the timed region; the timed region is "first add .. completion signal".

const THREAD_TASK = new URL('./thread-task.mjs', import.meta.url);

// Threads: every pool gets its threads started and one task through each before the clock starts,
// so thread start-up is outside the timed region for all three alike. Results are awaited.
async function primeAndTime(run, threads, n) {
  await Promise.all(Array.from({ length: threads }, (_, i) => run(i)));
  const t0 = now();
  const results = [];
  for (let i = 0; i < n; i++) results.push(run(i));
  const values = await Promise.all(results);
  const ns = elapsed(t0);
  for (let i = 0; i < n; i++) if (values[i] !== i + 1) throw new Error(`task ${i} returned ${values[i]}`);
  ran += n;
  return ns;
}

// The noop and result cells of qmux, with `asyncContext` as given or left out (undefined: the
// default, and a build from before the option), shared by the peer comparison and the
// async-context cells.
const workerOptions = (c, asyncContext) => (asyncContext === undefined ? { concurrency: c } : { concurrency: c, asyncContext });
const noopWorker = async (n, c, asyncContext) => {
  const { Worker } = await loadQmux();
  const w = new Worker(job, workerOptions(c, asyncContext));
  const q = w.bindQueue();
  const t0 = now();
  for (let i = 0; i < n; i++) q.add(i);
  await w.waitUntilIdle();
  return elapsed(t0);
};
const resultWorker = async (n, c, asyncContext) => {
  const { Worker } = await loadQmux();
  const w = new Worker(job, workerOptions(c, asyncContext));
  const q = w.bindQueue();
  const t0 = now();
  const handles = [];
  for (let i = 0; i < n; i++) handles.push(q.add(i));
  await Promise.all(handles.map((h) => h.result()));
  return elapsed(t0);
};

const throughput = {
  threads: {
    async 'qmux-threads'(n, c) {
      const { Worker } = await loadQmux();
      const w = new Worker(THREAD_TASK, { concurrency: c, minThreads: c });
      const q = w.bindQueue();
      const ns = await primeAndTime((i) => q.add(i).result(), c, n);
      await w.stop();
      return ns;
    },
    async tinypool(n, c) {
      const { Tinypool } = await import('tinypool');
      const pool = new Tinypool({ filename: THREAD_TASK.href, minThreads: c, maxThreads: c });
      const ns = await primeAndTime((i) => pool.run(i), c, n);
      await pool.destroy();
      return ns;
    },
    async piscina(n, c) {
      const { Piscina } = await import('piscina');
      const pool = new Piscina({ filename: THREAD_TASK.href, minThreads: c, maxThreads: c });
      const ns = await primeAndTime((i) => pool.run(i), c, n);
      await pool.destroy();
      return ns;
    },
  },
  noop: {
    qmux: (n, c) => noopWorker(n, c, undefined),
    async 'fastq-cb'(n, c) {
      const fastq = await loadFastq();
      const q = fastq(cbWorker, c);
      const drained = new Promise((resolve) => (q.drain = resolve));
      const t0 = now();
      for (let i = 0; i < n; i++) q.push(i, noopCb);
      await drained;
      return elapsed(t0);
    },
    async 'fastq-promise'(n, c) {
      const fastq = await loadFastq();
      const q = fastq.promise(job, c);
      const t0 = now();
      for (let i = 0; i < n; i++) q.push(i);
      await q.drained();
      return elapsed(t0);
    },
    async 'p-queue'(n, c) {
      const PQueue = await loadPQueue();
      const queue = new PQueue({ concurrency: c });
      const t0 = now();
      for (let i = 0; i < n; i++) queue.add(job);
      await queue.onIdle();
      return elapsed(t0);
    },
    async 'p-limit'(n, c) {
      const pLimit = await loadPLimit();
      const limit = pLimit(c);
      const t0 = now();
      let last;
      for (let i = 0; i < n; i++) last = limit(job);
      await pLimitIdle(limit, last);
      return elapsed(t0);
    },
    async async(n, c) {
      const async = await loadAsync();
      const q = async.queue(cbWorker, c);
      const t0 = now();
      // A callback is passed so that push does not allocate a promise per job (fire-and-forget).
      for (let i = 0; i < n; i++) q.push(i, noopCb);
      await q.drain();
      return elapsed(t0);
    },
    // The least a dispatcher can do and still give a handle per job: a handle object per add, a
    // FIFO array, a running count, one shared callback on each job's promise, and one pass per
    // microtask batch of adds. No options, no states beyond "started", no events, no stats: a
    // floor for qmux, not a peer.
    async 'handle-floor'(n, c) {
      class Handle {
        constructor(data) {
          this.data = data;
          this.started = false;
        }
      }
      const queue = [];
      let head = 0;
      let running = 0;
      let scheduled = false;
      let resolveIdle;
      const idle = new Promise((resolve) => (resolveIdle = resolve));
      const pump = () => {
        while (running < c && head < queue.length) {
          const h = queue[head];
          queue[head++] = undefined;
          h.started = true;
          running++;
          void job(h).then(done);
        }
      };
      const done = () => {
        running--;
        pump();
        if (running === 0 && head === queue.length) resolveIdle();
      };
      const pass = () => {
        scheduled = false;
        pump();
      };
      const add = (data) => {
        const h = new Handle(data);
        queue.push(h);
        if (!scheduled) {
          scheduled = true;
          queueMicrotask(pass);
        }
        return h;
      };
      const t0 = now();
      for (let i = 0; i < n; i++) add(i);
      await idle;
      return elapsed(t0);
    },
    async floor(n) {
      const jobs = new Array(n).fill(job);
      const t0 = now();
      await Promise.all(jobs.map((f) => f()));
      return elapsed(t0);
    },
  },

  result: {
    qmux: (n, c) => resultWorker(n, c, undefined),
    async 'fastq-promise'(n, c) {
      const fastq = await loadFastq();
      const q = fastq.promise(job, c);
      const t0 = now();
      const ps = [];
      for (let i = 0; i < n; i++) ps.push(q.push(i));
      await Promise.all(ps);
      return elapsed(t0);
    },
    async 'p-queue'(n, c) {
      const PQueue = await loadPQueue();
      const queue = new PQueue({ concurrency: c });
      const t0 = now();
      const ps = [];
      for (let i = 0; i < n; i++) ps.push(queue.add(job));
      await Promise.all(ps);
      return elapsed(t0);
    },
    async 'p-limit'(n, c) {
      const pLimit = await loadPLimit();
      const limit = pLimit(c);
      const t0 = now();
      const ps = [];
      for (let i = 0; i < n; i++) ps.push(limit(job));
      await Promise.all(ps);
      return elapsed(t0);
    },
    async async(n, c) {
      const async = await loadAsync();
      const q = async.queue(cbWorker, c);
      const t0 = now();
      const ps = [];
      for (let i = 0; i < n; i++) ps.push(q.pushAsync(i));
      await Promise.all(ps);
      return elapsed(t0);
    },
    floor: null, // filled below: same as noop's floor (Promise.all already awaits every result)
  },

  strategies: {},

  function: {
    async 'qmux-fn'(n, c) {
      const { Worker } = await loadQmux();
      const w = new Worker({ concurrency: c });
      const q = w.bindQueue();
      const t0 = now();
      const handles = [];
      for (let i = 0; i < n; i++) handles.push(q.add(job));
      await Promise.all(handles.map((h) => h.result()));
      return elapsed(t0);
    },
    async 'p-limit'(n, c) {
      return throughput.result['p-limit'](n, c);
    },
  },
};
throughput.result.floor = throughput.noop.floor;

// Async context (SPEC 13): the noop cell with the default (each job runs in its add's context)
// against `asyncContext: false`, outside any AsyncLocalStorage, and with every add made inside
// `als.run()` of one AsyncLocalStorage (a service's request context: on Node 20 an enabled
// AsyncLocalStorage also installs promise hooks, which every promise pays for, on or off).
let requestStorage;
const inRequest = async (run) => {
  const { AsyncLocalStorage } = await import('node:async_hooks');
  requestStorage ??= new AsyncLocalStorage();
  return requestStorage.run({ request: 1 }, run);
};
throughput.context = {
  'context-on': (n, c) => noopWorker(n, c, true),
  'context-off': (n, c) => noopWorker(n, c, false),
};
throughput['context-result'] = {
  'context-on': (n, c) => resultWorker(n, c, true),
  'context-off': (n, c) => resultWorker(n, c, false),
};
throughput['context-als'] = {
  'context-on': (n, c) => inRequest(() => noopWorker(n, c, true)),
  'context-off': (n, c) => inRequest(() => noopWorker(n, c, false)),
};

// Events: the noop workload with nobody listening, and with no-op listeners on the two events
// emitted per job ('active', 'completed'). The first is what every other qmux cell pays for
// events; the second shows what listening adds.
throughput.events = {
  'no-listeners': (n, c) => throughput.noop.qmux(n, c),
  async listening(n, c) {
    const { Worker } = await loadQmux();
    const w = new Worker(job, { concurrency: c });
    w.on('active', noopCb);
    w.on('completed', noopCb);
    const q = w.bindQueue();
    const t0 = now();
    for (let i = 0; i < n; i++) q.add(i);
    await w.waitUntilIdle();
    return elapsed(t0);
  },
};

async function strategyCell(name, n, c) {
  const { Worker, Strategy } = await loadQmux();
  let w;
  if (name === 'one-queue') {
    w = new Worker(job, { concurrency: c });
    const q = w.bindQueue();
    const t0 = now();
    for (let i = 0; i < n; i++) q.add(i);
    await w.waitUntilIdle();
    return elapsed(t0);
  }
  if (!Strategy || Strategy[name] === undefined) throw new Error(`Strategy.${name} is not exported by qmux`);
  w = new Worker(job, { concurrency: c, strategy: Strategy[name] });
  const qs = [1, 2, 3, 4].map((k) => (name === 'Weighted' ? w.bindQueue({ weight: k }) : w.bindQueue()));
  const t0 = now();
  for (let i = 0; i < n; i++) qs[i & 3].add(i);
  await w.waitUntilIdle();
  return elapsed(t0);
}
for (const name of ['one-queue', 'Priority', 'RoundRobin', 'MaxLen', 'MinLen', 'Weighted']) {
  throughput.strategies[name] = (n, c) => strategyCell(name, n, c);
}

// Sources (issue 13, picking that scales): one worker with 1000 bound queues, only the last one
// busy (the worst place for Priority, which takes the first eligible), under Priority, RoundRobin,
// Weighted, MaxLen and MinLen; and 1000 busy queues (job i into queue i % 1000, weights 1..4) under Weighted;
// against one queue bound alone (the picker is not asked then). Binding is not timed.
const SOURCES = 1000;
async function sourcesCell(n, c, { strategy, busy }) {
  const { Worker, Strategy } = await loadQmux();
  const w = strategy === undefined ? new Worker(job, { concurrency: c }) : new Worker(job, { concurrency: c, strategy: Strategy[strategy] });
  if (strategy === undefined) {
    const q = w.bindQueue();
    const t0 = now();
    for (let i = 0; i < n; i++) q.add(i);
    await w.waitUntilIdle();
    return elapsed(t0);
  }
  const qs = [];
  for (let k = 0; k < SOURCES; k++) qs.push(w.bindQueue(strategy === 'Weighted' ? { weight: 1 + (k % 4) } : undefined));
  const last = qs[SOURCES - 1];
  const t0 = now();
  if (busy) for (let i = 0; i < n; i++) qs[i % SOURCES].add(i);
  else for (let i = 0; i < n; i++) last.add(i);
  await w.waitUntilIdle();
  return elapsed(t0);
}
throughput.sources = {
  'one-source': (n, c) => sourcesCell(n, c, {}),
  'idle999-Priority': (n, c) => sourcesCell(n, c, { strategy: 'Priority', busy: false }),
  'idle999-RoundRobin': (n, c) => sourcesCell(n, c, { strategy: 'RoundRobin', busy: false }),
  'idle999-Weighted': (n, c) => sourcesCell(n, c, { strategy: 'Weighted', busy: false }),
  'idle999-MaxLen': (n, c) => sourcesCell(n, c, { strategy: 'MaxLen', busy: false }),
  'idle999-MinLen': (n, c) => sourcesCell(n, c, { strategy: 'MinLen', busy: false }),
  'busy1000-Weighted': (n, c) => sourcesCell(n, c, { strategy: 'Weighted', busy: true }),
};

// Keys (SPEC 10): one queue bound with keys, job i of key i % K, against a plain queue. Keys are
// numbers (compared as String(key)); weights 1..4 by the key's last digit.
const KEYS = { 10: 10, '100k': 100_000 };
const byKey = (i) => i;
const weightOf = (key) => 1 + (key.charCodeAt(key.length - 1) % 4);

async function keyedCell(n, c, { keys, weighted, capped }) {
  const { Worker } = await loadQmux();
  const w = new Worker(job, { concurrency: c });
  if (keys === 0) {
    const q = w.bindQueue();
    const t0 = now();
    for (let i = 0; i < n; i++) q.add(i);
    await w.waitUntilIdle();
    return elapsed(t0);
  }
  const options = { by: (i) => byKey(i % keys) };
  if (weighted) options.weight = weightOf;
  if (capped) options.concurrency = 1;
  const q = w.bindQueue({ keys: options });
  const t0 = now();
  for (let i = 0; i < n; i++) q.add(i);
  await w.waitUntilIdle();
  const ns = elapsed(t0);
  if (q.keyCount !== 0) throw new Error(`${q.keyCount} keys remembered after the drain`);
  return ns;
}

throughput.keys = { plain: (n, c) => keyedCell(n, c, { keys: 0 }) };
throughput['keys-capped'] = {};
for (const [label, keys] of Object.entries(KEYS)) {
  throughput.keys[`keys-${label}`] = (n, c) => keyedCell(n, c, { keys });
  throughput.keys[`weighted-${label}`] = (n, c) => keyedCell(n, c, { keys, weighted: true });
  throughput['keys-capped'][`capped-${label}`] = (n, c) => keyedCell(n, c, { keys, capped: true });
  throughput['keys-capped'][`capped-weighted-${label}`] = (n, c) => keyedCell(n, c, { keys, weighted: true, capped: true });
}

// ---------------------------------------------------------------------------------------------
// Memory: paused queue, n fire-and-forget jobs with small integer data. Returns
// { queuedBytesPerJob, retainedBytes, nsPerAdd }. The queue object stays referenced after the
// drain, so "retained" is what an idle queue keeps alive (e.g. backing stores that never shrink).

// Objects kept strongly reachable until the end of a memory measurement. Without this, V8 may
// drop a queue that the rest of an async function no longer uses, and "retained after drain"
// would measure a collected queue instead of an idle one.
let keepAlive = [];

async function measureMemory(n, setup) {
  keepAlive = [];
  const { add, startAndDrain } = await setup();
  const base = heapUsed();
  const t0 = now();
  for (let i = 0; i < n; i++) add(i);
  const nsAdd = elapsed(t0);
  const queued = heapUsed();
  ran = 0;
  await startAndDrain();
  if (ran !== n) throw new Error(`${ran} of ${n} jobs ran before the drain signal`);
  const after = heapUsed();
  if (keepAlive.length === 0) throw new Error('memory setup did not register its queue in keepAlive');
  keepAlive = [];
  return {
    queuedBytesPerJob: (queued - base) / n,
    retainedBytes: after - base,
    nsPerAdd: nsAdd / n,
  };
}

const memory = {
  async qmux(n, c) {
    const { Worker } = await loadQmux();
    return measureMemory(n, async () => {
      const w = new Worker(job, { concurrency: c, autoRun: false });
      const q = w.bindQueue();
      keepAlive.push(w, q);
      return {
        add: (i) => void q.add(i),
        startAndDrain: async () => {
          w.start();
          await w.waitUntilIdle();
        },
      };
    });
  },
  async 'fastq-cb'(n, c) {
    const fastq = await loadFastq();
    return measureMemory(n, async () => {
      const q = fastq(cbWorker, c);
      q.pause();
      keepAlive.push(q);
      return {
        add: (i) => q.push(i, noopCb),
        startAndDrain: async () => {
          const drained = new Promise((resolve) => (q.drain = resolve));
          q.resume();
          await drained;
        },
      };
    });
  },
  async 'p-queue'(n, c) {
    const PQueue = await loadPQueue();
    return measureMemory(n, async () => {
      const queue = new PQueue({ concurrency: c, autoStart: false });
      keepAlive.push(queue);
      return {
        add: () => void queue.add(job),
        startAndDrain: async () => {
          queue.start();
          await queue.onIdle();
        },
      };
    });
  },
  async async(n, c) {
    const async = await loadAsync();
    return measureMemory(n, async () => {
      const q = async.queue(cbWorker, c);
      q.pause();
      keepAlive.push(q);
      return {
        add: (i) => q.push(i, noopCb),
        startAndDrain: async () => {
          const drained = q.drain();
          q.resume();
          await drained;
        },
      };
    });
  },
};

// Keys: the same paused-queue measurement, on a plain queue and on a queue keyed over 100,000
// keys; "retained" then shows that drained keys are forgotten.
const keysMemory = {
  async plain(n, c) {
    return memory.qmux(n, c);
  },
  async 'keys-100k'(n, c) {
    const { Worker } = await loadQmux();
    return measureMemory(n, async () => {
      const w = new Worker(job, { concurrency: c, autoRun: false });
      const q = w.bindQueue({ keys: { by: (i) => i % 100_000 } });
      keepAlive.push(w, q);
      return {
        add: (i) => void q.add(i),
        startAndDrain: async () => {
          w.start();
          await w.waitUntilIdle();
          if (q.keyCount !== 0) throw new Error(`${q.keyCount} keys remembered after the drain`);
        },
      };
    });
  },
};

// ---------------------------------------------------------------------------------------------
// Delayed: n jobs with delay = random() * 60 s. Delays are drawn before the timed loop.

async function delayed(n, c) {
  const { Worker } = await loadQmux();
  const delays = new Float64Array(n);
  for (let i = 0; i < n; i++) delays[i] = Math.random() * 60_000;
  const w = new Worker(job, { concurrency: c });
  const q = w.bindQueue();
  ran = 0;
  const timersBefore = timeouts();
  const base = heapUsed();
  const t0 = now();
  for (let i = 0; i < n; i++) q.add(i, { delay: delays[i] });
  const timersSync = timeouts();
  // qmux batches the adds of one synchronous run into one scheduling pass on a microtask, which
  // is where the wake-up timer gets armed. That microtask was queued during the loop, so it runs
  // before this await resumes; it is part of the cost of adding and so inside the timed region.
  await new Promise((resolve) => queueMicrotask(resolve));
  const nsAdd = elapsed(t0);
  const timersMicrotask = timeouts();
  // Jobs whose delay ran out while the loop was still adding (about 17 per ms of loop time) are
  // due at that pass and fill the slots; the timer is armed once they have run, which (no-op jobs)
  // happens within the same microtask drain. So count the timers after one event-loop turn.
  await new Promise(setImmediate);
  const timersArmed = timeouts();
  const ranBeforePurge = ran;
  const queued = heapUsed();
  const lengthAfterAdd = q.length;
  const t1 = now();
  q.purge();
  const nsPurge = elapsed(t1);
  await w.stop();
  await new Promise(setImmediate);
  return {
    nsPerAdd: nsAdd / n,
    nsPerPurgedJob: nsPurge / Math.max(1, lengthAfterAdd),
    heapBytesPerJob: (queued - base) / n,
    timersBefore,
    timersSync,
    timersMicrotask,
    timersArmed,
    timersAfterPurge: timeouts(),
    lengthAfterAdd,
    lengthAfterPurge: q.length,
    ranBeforePurge,
  };
}

// ---------------------------------------------------------------------------------------------

async function main() {
  const { workload, variant, jobs: n, concurrency: c } = spec;
  // Warm-up: two passes (spec.warmupPasses) of 10% of the measured count (at least 5,000 jobs, at
  // most the measured count), each on a fresh queue, so that the measured pass runs optimised code.
  // JIT warm-up matters a lot at small counts: the first few thousand jobs of any library here
  // cost several times the steady-state figure.
  const warmN = spec.warmup ?? Math.min(n, Math.max(5_000, Math.floor(n / 10)));
  const passes = spec.warmupPasses ?? 2;
  let sample;

  if (workload in throughput) {
    const impl = throughput[workload][variant];
    if (!impl) throw new Error(`unknown variant ${workload}/${variant}`);
    const once = async (count) => {
      ran = 0;
      const ns = await impl(count, c);
      if (ran !== count) throw new Error(`${ran} of ${count} jobs ran before the completion signal`);
      return ns;
    };
    for (let p = 0; p < passes; p++) await once(warmN);
    fullGc();
    // CPU time of the whole process (every thread: V8's GC helpers too) over the measured pass:
    // on a machine shared with other work it moves far less than wall time does.
    const cpu0 = process.cpuUsage();
    const ns = await once(n);
    const cpu = process.cpuUsage(cpu0);
    sample = { ns, jobs: n, nsPerJob: ns / n, cpuNsPerJob: ((cpu.user + cpu.system) * 1000) / n };
  } else if (workload === 'memory' || workload === 'keys-memory') {
    const impl = (workload === 'memory' ? memory : keysMemory)[variant];
    if (!impl) throw new Error(`unknown variant ${workload}/${variant}`);
    for (let p = 0; p < passes; p++) await impl(warmN, c);
    sample = await impl(n, c);
  } else if (workload === 'delayed') {
    if (variant !== 'qmux') throw new Error(`unknown variant ${workload}/${variant}`);
    for (let p = 0; p < passes; p++) await delayed(Math.min(warmN, 20_000), c);
    sample = await delayed(n, c);
  } else {
    throw new Error(`unknown workload ${workload}`);
  }

  // Diagnostics: timers still armed once the measured queue is idle (they would keep the process
  // alive), and unhandled rejections seen during the cell.
  await new Promise(setImmediate);
  sample.leftoverTimers = timeouts();
  if (unhandled.length) sample.unhandledRejections = { count: unhandled.length, first: unhandled[0] };
  return sample;
}

main().then(
  (sample) => {
    emit({ ok: true, ...sample });
    process.exit(0);
  },
  (err) => {
    emit({
      ok: false,
      error: err instanceof Error ? `${err.name}: ${err.message}` : String(err),
      stack: String(err?.stack ?? '')
        .split('\n')
        .slice(1, 4)
        .map((l) => l.trim())
        .join(' | '),
    });
    process.exit(1);
  },
);
