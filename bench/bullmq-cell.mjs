// One BullMQ drain measurement in a fresh process (bench/bullmq.mjs starts it):
//
//   node bench/bullmq-cell.mjs '{"variant":"qmux","port":6379,"jobs":5000,"concurrency":16}'
//
// Fills a new BullMQ queue with `jobs` no-op jobs (BullMQ's Queue.addBulk), then times draining it:
// `bullmq` with BullMQ's own Worker (its processing loop, which combines each completion with the
// next fetch), `qmux` with a qmux Worker through BullMQSource (prefetch = concurrency). The clock
// stops once every outcome is recorded in Redis: BullMQ's `completed` events (emitted after the
// move), and for qmux `worker.stop()` after the last `completed` (it resolves once every outcome is
// recorded). A warm-up drain of 1,000 jobs on another queue runs first. Prints one JSON line.
import { writeSync } from 'node:fs';
import { Queue, Worker as BullWorker } from 'bullmq';
import { Worker } from '../dist/index.js';
import { BullMQSource } from '../dist/bullmq/index.js';

const spec = JSON.parse(process.argv[2] ?? '{}');
const connection = { host: '127.0.0.1', port: spec.port, maxRetriesPerRequest: null };
const tag = `${spec.variant}-${process.pid}-${Date.now()}`;

async function fill(name, jobs) {
  const queue = new Queue(name, { connection });
  for (let i = 0; i < jobs; i += 1000) {
    await queue.addBulk(Array.from({ length: Math.min(1000, jobs - i) }, (_, k) => ({ name: 'noop', data: { i: i + k } })));
  }
  return queue;
}

async function drainBullMQ(name, jobs) {
  let done = 0;
  let finish;
  const finished = new Promise((resolve) => (finish = resolve));
  const started = performance.now();
  const worker = new BullWorker(name, async () => undefined, { connection, concurrency: spec.concurrency });
  worker.on('completed', () => {
    if (++done === jobs) finish(performance.now());
  });
  const ended = await finished;
  await worker.close();
  return ended - started;
}

async function drainQmux(name, jobs) {
  let done = 0;
  let finish;
  const finished = new Promise((resolve) => (finish = resolve));
  const started = performance.now();
  const worker = new Worker(() => Promise.resolve(), { concurrency: spec.concurrency });
  worker.on('completed', () => {
    if (++done === jobs) finish();
  });
  worker.bindRemote(new BullMQSource(name, { connection }), { prefetch: spec.concurrency });
  await finished;
  await worker.stop(); // resolves once every outcome is recorded
  return performance.now() - started;
}

try {
  const drain = spec.variant === 'bullmq' ? drainBullMQ : drainQmux;
  const warm = await fill(`${tag}-warm`, 1000);
  await drain(warm.name, 1000);
  const queue = await fill(tag, spec.jobs);
  const client = await queue.getBackend().client;
  const redisCpu = async () => {
    const info = await client.info('cpu');
    const read = (key) => Number(new RegExp(`${key}:([\\d.]+)`).exec(info)?.[1] ?? 0);
    return (read('used_cpu_user') + read('used_cpu_sys')) * 1e6; // µs
  };
  const redisBefore = await redisCpu();
  const cpuBefore = process.cpuUsage();
  const ms = await drain(queue.name, spec.jobs);
  const cpu = process.cpuUsage(cpuBefore);
  const redisUs = (await redisCpu()) - redisBefore;
  const counts = await queue.getJobCounts('completed', 'wait', 'active');
  if (counts.completed !== spec.jobs) throw new Error(`only ${counts.completed} of ${spec.jobs} completed`);
  await warm.obliterate({ force: true });
  await queue.obliterate({ force: true });
  await warm.close();
  await queue.close();
  writeSync(
    1,
    `${JSON.stringify({ ok: true, variant: spec.variant, jobs: spec.jobs, ms, jobsPerSec: (spec.jobs / ms) * 1000, nodeCpuUsPerJob: (cpu.user + cpu.system) / spec.jobs, redisCpuUsPerJob: redisUs / spec.jobs })}\n`,
  );
  process.exit(0);
} catch (error) {
  writeSync(1, `${JSON.stringify({ ok: false, variant: spec.variant, error: String(error?.stack ?? error) })}\n`);
  process.exit(1);
}
