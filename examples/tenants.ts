// Fairness between tenants inside one queue: `keys` (SPEC 10).
//
//   npm run build && npx tsx examples/tenants.ts
//
// One tenant adds 10,000 jobs; a little later five others add 20 each. The same jobs run twice:
// on a plain queue, where the late tenants wait behind the whole backlog, and on a queue bound
// with `keys: { by: (job) => job.tenant }`, which takes turns between tenants, so each of the
// late tenants waits about one turn per job instead of 10,000 jobs.
//
// Time is counted in job slots, not read from the clock, so the table is the same on every
// machine: every job takes one slot of 1 ms, 4 slots run at once (a start at number i happens at
// i / 4 ms), and the five late tenants add their jobs when the big one has started 200.
import { Worker, type Job, type Queue } from 'qmux';

interface Work {
  tenant: string;
  addedAt: number;
}

const CONCURRENCY = 4;
const BIG = { name: 'big', jobs: 10_000 };
const SMALL = ['t1', 't2', 't3', 't4', 't5'];
const SMALL_JOBS = 20;
const LATE_AFTER = 200; // starts before the small tenants arrive

/** Runs the workload once and returns each tenant's waits (ms of virtual time). */
async function run(keyed: boolean): Promise<Map<string, number[]>> {
  const waits = new Map<string, number[]>();
  let started = 0;
  const now = (): number => started / CONCURRENCY;
  let queue: Queue<Work, void> | undefined;
  const worker = new Worker<Work, void>(
    (job: Job<Work>) => {
      const list = waits.get(job.data.tenant) ?? [];
      list.push(now() - job.data.addedAt);
      waits.set(job.data.tenant, list);
      started++;
      if (started === LATE_AFTER) {
        for (const tenant of SMALL) for (let i = 0; i < SMALL_JOBS; i++) queue?.add({ tenant, addedAt: now() });
      }
    },
    { concurrency: CONCURRENCY, autoRun: false },
  );
  queue = keyed ? worker.bindQueue({ name: 'exports', keys: { by: (work) => work.tenant } }) : worker.bindQueue({ name: 'exports' });
  for (let i = 0; i < BIG.jobs; i++) queue.add({ tenant: BIG.name, addedAt: 0 });
  worker.start();
  await worker.waitUntilIdle();
  if (keyed && queue.keyCount !== 0) throw new Error(`keys left after draining: ${queue.keyCount}`);
  return waits;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] as number;
}

const plain = await run(false);
const keyed = await run(true);

const cell = (waits: number[] | undefined): string =>
  waits === undefined ? '-' : `${percentile(waits, 50).toFixed(2)} / ${percentile(waits, 99).toFixed(2)}`;
const rows = [BIG.name, ...SMALL].map((tenant) => [tenant, String(plain.get(tenant)?.length ?? 0), cell(plain.get(tenant)), cell(keyed.get(tenant))]);
const header = ['tenant', 'jobs', 'plain queue: wait p50 / p99 (ms)', 'keyed queue: wait p50 / p99 (ms)'];
const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => (row[i] as string).length)));
const line = (cells: string[]): string =>
  `| ${cells.map((c, i) => (i < 2 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join(' | ')} |`;
console.log(line(header));
console.log(`|${widths.map((w, i) => (i < 2 ? `${'-'.repeat(w + 1)}-` : `${'-'.repeat(w + 1)}:`)).join('|')}|`);
for (const row of rows) console.log(line(row));
