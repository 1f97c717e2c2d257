// Per-tenant fairness with Strategy.Weighted: one queue per tenant, weights 6:3:1.
//
//   npm run build && npx tsx examples/weighted.ts
//
// Every tenant has a backlog, so all three queues stay eligible and the worker serves them in the
// smooth weighted order A B A A B A C A B A (nginx's algorithm), not in bursts (A A A A A A B B B C).
// No tenant is starved: the small one gets one job in ten, and once the big one runs dry the
// others share its slots (the strategy only chooses among eligible sources).
import { Strategy, Worker, type Job } from 'qmux';

interface Request {
  tenant: string;
  n: number;
}

const tenants = [
  { name: 'acme', weight: 6 },
  { name: 'globex', weight: 3 },
  { name: 'initech', weight: 1 },
];
const JOBS_PER_TENANT = 20;

const served: string[] = [];
const worker = new Worker(
  async (job: Job<Request>) => {
    served.push(job.source);
    await new Promise((resolve) => setTimeout(resolve, 1)); // a little async work
  },
  { strategy: Strategy.Weighted, autoRun: false }, // concurrency 1: jobs start in the order picked
);

for (const { name, weight } of tenants) {
  const queue = worker.bindQueue({ name, weight });
  for (let n = 1; n <= JOBS_PER_TENANT; n++) queue.add({ tenant: name, n });
}

worker.start();
await worker.waitUntilIdle();

const pad = Math.max(...tenants.map((t) => t.name.length));
console.log(`Weighted ${tenants.map((t) => t.weight).join(':')}, ${JOBS_PER_TENANT} jobs queued per tenant, one slot\n`);

// Which tenant each job came from, in the order they started, ten to a row.
console.log(`Order the jobs started in (${tenants.map((t) => `${t.name[0]} = ${t.name}`).join(', ')}):`);
for (let i = 0; i < served.length; i += 10) {
  const row = served.slice(i, i + 10).map((tenant) => tenant[0]);
  console.log(`  ${`${i + 1}-${i + row.length}`.padStart(5)}  ${row.join(' ')}`);
}

// While every tenant has work waiting, the shares follow the weights.
const window = 20;
console.log(`\nShares of the first ${window} jobs (every tenant had work waiting):`);
for (const { name, weight } of tenants) {
  const count = served.slice(0, window).filter((tenant) => tenant === name).length;
  const share = ((100 * count) / window).toFixed(0).padStart(3);
  console.log(`  ${name.padEnd(pad)}  weight ${weight}  ${String(count).padStart(2)} jobs  ${share}%`);
}

// When a tenant runs out, the others take its turns: nobody waits for an empty queue.
console.log(`\nWhen each tenant's last job started (of ${served.length}):`);
for (const { name } of tenants) {
  console.log(`  ${name.padEnd(pad)}  job ${served.lastIndexOf(name) + 1}`);
}
