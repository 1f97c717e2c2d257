// stats(): counters, per-source numbers, the age of the oldest due job, wait/run percentiles.
//
//   npm run build && npx tsx examples/stats.ts
//
// `worker.stats()` is cheap enough to poll. Here a worker with 3 slots serves an `interactive`
// queue (ranked first) and a `batch` queue behind it. A monitor prints a snapshot every 150 ms:
// while interactive work keeps arriving, the batch queue's oldest due job ages; that age
// (`oldestDueAgeMs`) is the number to alert on for a starving queue. At the end: the counters,
// and wait/run time percentiles (measured on about one job in `sampleEvery`, so cheap to keep on).
import { Registry, Worker, type Job } from 'qmux';

interface Work {
  ms: number;
  fail?: boolean;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const worker = new Worker(
  async (job: Job<Work>) => {
    await sleep(job.data.ms);
    if (job.data.fail && job.attempt === 1) throw new Error('flaky');
  },
  { name: 'api', concurrency: 3, retry: { attempts: 2, backoff: { type: 'fixed', delay: 50 } } },
);
const interactive = worker.bindQueue({ name: 'interactive', priority: 1 });
const batch = worker.bindQueue({ name: 'batch', priority: 2 });

for (let i = 0; i < 40; i++) batch.add({ ms: 20 });
// Interactive requests arrive in 8 bursts of 8, 50 ms apart; every 7th fails once and is retried.
let n = 0;
let bursts = 0;
const burstsDone = new Promise<void>((resolve) => {
  const burst = setInterval(() => {
    for (let i = 0; i < 8; i++) interactive.add({ ms: 30, fail: ++n % 7 === 0 });
    if (++bursts === 8) {
      clearInterval(burst);
      resolve();
    }
  }, 50);
});

const row = (cells: (string | number | null)[]) => cells.map((c, i) => String(c ?? '-').padStart(i === 0 ? 6 : 12)).join('');
console.log(row(['t(ms)', 'running', 'inter. wait', 'batch wait', 'batch age', 'succeeded']));
const t0 = Date.now();
const monitor = setInterval(() => {
  const s = worker.stats();
  console.log(
    row([
      Math.round((Date.now() - t0) / 50) * 50,
      s.running,
      s.sources.interactive?.waiting ?? 0,
      s.sources.batch?.waiting ?? 0,
      s.sources.batch?.oldestDueAgeMs === null ? null : `${Math.round(s.sources.batch?.oldestDueAgeMs ?? 0)}ms`,
      s.counters.succeeded,
    ]),
  );
}, 150);

await burstsDone;
await worker.waitUntilIdle();
clearInterval(monitor);

const s = worker.stats();
const c = s.counters;
console.log(
  `\ncounters: added ${c.added}, started ${c.started}, succeeded ${c.succeeded}, failed ${c.failed}, retried ${c.retried}, dead ${c.dead}, cancelled ${c.cancelled}`,
);
// null: nothing timed yet.
const ms = (x: number | null) => (x === null ? 'none' : `${x.toFixed(1)}ms`);
for (const [label, t] of [
  ['wait', s.waitTime],
  ['run', s.runTime],
] as const) {
  console.log(
    `${label} time over ${t.count} timed jobs (every job, or 1 in ${s.sampleEvery} when busy): p50 ${ms(t.p50)}, p90 ${ms(t.p90)}, p99 ${ms(t.p99)}, max ${ms(t.max)}`,
  );
}
console.log(`now: status ${s.status}, waiting ${s.waiting}, oldest due job ${s.oldestDueAgeMs === null ? 'none' : `${s.oldestDueAgeMs}ms`}`);

// A Registry gathers the stats of every worker it holds, by name.
const registry = new Registry().add(worker);
console.log(`registry.stats() has: ${Object.keys(registry.stats().workers).join(', ')}`);
