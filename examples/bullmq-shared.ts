// Three qmux workers share one BullMQ queue (Redis), and each keeps a local priority queue that
// goes first: "my in-memory work, then the shared backlog".
//
//   npm run build && npx tsx examples/bullmq-shared.ts
//
// It needs a Redis server: give one with REDIS_PORT (and REDIS_HOST, default 127.0.0.1), or, when
// none is given, it starts `redis-server` itself on a free port (no persistence) and stops it at
// the end (apt-get install redis-server). Three workers in one process stand for three machines:
// each would run the same code against the same Redis.
//
// Prints (the split of the shared jobs varies from run to run):
//   using redis-server started by this example on port 41234
//   a ran local: a-P0 page, a-P1 resize, a-P2 cleanup, then 19 shared jobs
//   b ran local: b-P0 page, b-P1 resize, b-P2 cleanup, then 21 shared jobs
//   c ran local: c-P0 page, c-P1 resize, c-P2 cleanup, then 20 shared jobs
//   shared: 60 jobs, each run once, 60 completed in BullMQ
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { Worker, type Job } from 'qmux';
import { BullMQSource } from 'qmux/bullmq';

/** Starts a throwaway redis-server on a free loopback port. */
async function startRedis(): Promise<{ port: number; stop(): Promise<void> }> {
  const port = await new Promise<number>((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
  const dir = mkdtempSync(join(tmpdir(), 'qmux-example-redis-'));
  const child: ChildProcess = spawn('redis-server', [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
  ]);
  await new Promise<void>((resolve, reject) => {
    child.once('error', () => reject(new Error('could not run redis-server: install it (apt-get install redis-server) or set REDIS_PORT')));
    let out = '';
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      if (out.includes('Ready to accept connections')) resolve();
    });
  });
  return {
    port,
    stop: () =>
      new Promise<void>((resolve) => {
        child.once('exit', () => {
          rmSync(dir, { recursive: true, force: true });
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}

const given = process.env.REDIS_PORT;
const redis = given === undefined ? await startRedis() : undefined;
const connection = { host: process.env.REDIS_HOST ?? '127.0.0.1', port: Number(given ?? redis?.port), maxRetriesPerRequest: null };
console.log(
  given === undefined
    ? `using redis-server started by this example on port ${connection.port}`
    : `using Redis at ${connection.host}:${connection.port}`,
);

// A producer anywhere (another service, another machine) adds jobs with BullMQ's own API.
const queueName = `shared-${process.pid}`;
const producer = new Queue(queueName, { connection });
await producer.addBulk(Array.from({ length: 60 }, (_, i) => ({ name: 'render', data: `shared-${i}` })));

const ranBy = new Map<string, string[]>(); // job -> workers that ran it
const report: string[] = [];
const workers = ['a', 'b', 'c'].map((name) => {
  const local: string[] = [];
  let shared = 0;
  const worker = new Worker(
    async (job: Job<string>) => {
      if (job.source === 'local') local.push(job.data);
      else {
        shared++;
        ranBy.set(job.data, [...(ranBy.get(job.data) ?? []), name]);
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
      return `${name} did ${job.data}`;
    },
    { name, concurrency: 2, autoRun: false },
  );
  const urgent = worker.bindPriorityQueue({ name: 'local', priority: 1 }); // in-memory, this process only
  worker.bindRemote(new BullMQSource<string, string>(queueName, { connection }), { name: 'shared', priority: 2, prefetch: 2 });
  urgent.add(`${name}-P2 cleanup`, 2);
  urgent.add(`${name}-P0 page`, 0);
  urgent.add(`${name}-P1 resize`, 1);
  return { name, worker, local, shared: () => shared };
});

for (const { worker } of workers) worker.start();
// Wait until BullMQ has recorded every shared job as completed.
while ((await producer.getJobCounts('completed')).completed < 60) await new Promise((resolve) => setTimeout(resolve, 20));

// stop(): hands back anything claimed and not started, records the outcomes, closes the connections.
await Promise.all(workers.map(({ worker }) => worker.stop()));
for (const { name, local, shared } of workers) report.push(`${name} ran local: ${local.join(', ')}, then ${shared()} shared jobs`);
console.log(report.join('\n'));
const once = [...ranBy.values()].every((by) => by.length === 1);
const completed = (await producer.getJobCounts('completed')).completed;
console.log(`shared: ${ranBy.size} jobs, ${once ? 'each run once' : 'some run twice'}, ${completed} completed in BullMQ`);

await producer.obliterate({ force: true });
await producer.close();
await redis?.stop();
