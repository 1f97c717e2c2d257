// The MaxLen and MinLen strategies: three unranked queues (2 alerts, 1 report, 3 emails), filled
// before start(), one job at a time. MaxLen takes from the longest queue each time (a tie goes to
// the first bound), so the backlogs shrink together; MinLen takes from the shortest non-empty one,
// so the report goes first and each queue is run dry before the next. (A port of varmq's Go
// example strategies-length, whose orders these are; docs/strategies.md shows each pick.)
//
//   npm run build && npx tsx examples/strategies-length.ts
//
// Prints:
//   MaxLen: email alert email alert report email
//   MinLen: report alert alert email email email
import { Strategy, Worker, type Job } from 'qmux';

async function run(name: string, strategy: Strategy): Promise<void> {
  const worker = new Worker(
    (job: Job<string>) => {
      process.stdout.write(` ${job.data}`);
    },
    { strategy, autoRun: false },
  );

  const alerts = worker.bindQueue();
  const reports = worker.bindQueue();
  const emails = worker.bindQueue();

  alerts.add('alert');
  alerts.add('alert');
  reports.add('report');
  emails.add('email');
  emails.add('email');
  emails.add('email');

  process.stdout.write(`${name}:`);
  worker.start();
  await worker.waitUntilIdle();
  process.stdout.write('\n');
}

await run('MaxLen', Strategy.MaxLen);
await run('MinLen', Strategy.MinLen);
