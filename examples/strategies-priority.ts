// Port of strategies-priority/main.go (seeds/varmq-strategies.md): the Priority strategy, the default.
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
