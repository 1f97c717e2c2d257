// The Priority strategy, the default: alerts (priority 1), reports (priority 2) and emails (no
// priority: last), filled lowest rank first, one job at a time. The worker always takes from the
// first queue in priority order that has a job, so alerts run first and emails last, whatever the
// order they were added in. (A port of varmq's Go example strategies-priority, whose order this is.)
//
//   npm run build && npx tsx examples/strategies-priority.ts
//
// Prints:
//   alert 1
//   alert 2
//   report 1
//   email 1
//   email 2
import { Worker, type Job } from 'qmux';

// Concurrency 1 takes one job at a time, so jobs print in the order they are taken.
const worker = new Worker(
  (job: Job<string>) => {
    console.log(job.data);
  },
  { autoRun: false },
);

const alerts = worker.bindQueue({ priority: 1 });
const reports = worker.bindQueue({ priority: 2 });
const emails = worker.bindQueue(); // no priority: it ranks last

// Fill the lowest-ranked queue first.
emails.add('email 1');
emails.add('email 2');
reports.add('report 1');
alerts.add('alert 1');
alerts.add('alert 2');

worker.start();
await worker.waitUntilIdle();
