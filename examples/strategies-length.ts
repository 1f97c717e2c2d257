// Port of strategies-length/main.go (seeds/varmq-strategies.md): the MaxLen and MinLen strategies.
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
