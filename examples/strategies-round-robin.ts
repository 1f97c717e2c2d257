// The RoundRobin strategy: three unranked queues (alerts, reports, emails, in bind order), filled
// before start(), one job at a time. The worker serves each queue in turn; once reports is empty
// it is skipped without spending a turn, and alerts and emails share the turns. (A port of varmq's
// Go example strategies-round-robin, whose order this is; docs/strategies.md explains every pick.)
//
//   npm run build && npx tsx examples/strategies-round-robin.ts
//
// Prints:
//   alert 1
//   report 1
//   email 1
//   alert 2
//   email 2
//   email 3
import { Strategy, Worker, type Job } from 'qmux';

const worker = new Worker(
  (job: Job<string>) => {
    console.log(job.data);
  },
  { strategy: Strategy.RoundRobin, autoRun: false },
);

const alerts = worker.bindQueue();
const reports = worker.bindQueue();
const emails = worker.bindQueue();

alerts.add('alert 1');
alerts.add('alert 2');
reports.add('report 1');
emails.add('email 1');
emails.add('email 2');
emails.add('email 3');

worker.start();
await worker.waitUntilIdle();
