/**
 * BullMQSource on a real redis-server (SPEC 9), set up as in test/bullmq.test.ts (one server for
 * the file, skipped with a notice without redis-server unless QMUX_REQUIRE_REDIS=1): a claimed
 * job whose lock lapses before it starts, a result BullMQ cannot store, and stop() with Redis
 * down while claimed jobs wait. Real time, generous bounds.
 */
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BullMQSource } from '../src/bullmq/index.js';
import { Worker, type Job } from '../src/index.js';
import { REDIS_MISSING_NOTICE, RedisServer, redisRequired, redisServerInstalled } from './support/redis-server.js';

const available = redisServerInstalled;
if (!available && !redisRequired) console.warn(REDIS_MISSING_NOTICE);

describe.runIf(!available && redisRequired)('redis-server is required (QMUX_REQUIRE_REDIS=1)', () => {
  it('is installed', () => {
    expect.fail('redis-server is not on the PATH; install it with `apt-get install redis-server`');
  });
});

/** Polls `check` (every 20 ms) until it holds, or fails after `boundMs`. */
async function until(what: string, check: () => boolean | Promise<boolean>, boundMs = 15_000): Promise<void> {
  const deadline = Date.now() + boundMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${boundMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** What `promise` settles to within `ms`, else `pending`. */
function within<V>(promise: Promise<V>, ms: number, pending: string): Promise<V | string> {
  return Promise.race([promise, sleep(ms).then(() => pending)]);
}

let queueCount = 0;

describe.runIf(available)('BullMQSource on a real Redis: claims lost, results BullMQ cannot store, stop with Redis down', () => {
  let redis: RedisServer;
  const queues: Queue[] = [];

  beforeAll(async () => {
    redis = await RedisServer.start();
  });
  afterAll(async () => {
    await Promise.all(queues.map((queue) => queue.close()));
    await redis?.destroy();
  });

  function newQueue(): Queue {
    const queue = new Queue(`claims${++queueCount}`, { connection: redis.connection });
    queue.on('error', () => undefined);
    queues.push(queue);
    return queue;
  }

  // adapter.ts, RemoteAdapter.extend: "May resolve to the jobs whose claim could not be renewed
  // (lost): the worker stops renewing them and drops them if they have not started."
  // SPEC 9: "No job is lost, and only jobs that were running in the dead process ... can run twice."
  // README: "a lock renewed late is a lock lost: the engine gives the job to someone else".
  it('drops a claimed, unstarted job whose lock is lost instead of running it (the engine gives it out again)', async () => {
    const queue = newQueue();
    await queue.add('a', 'A');
    await queue.add('b', 'B');
    await queue.add('c', 'C');
    let finish = (): void => undefined;
    const blocked = new Promise<void>((resolve) => {
      finish = resolve;
    });
    const ran: string[] = [];
    const worker = new Worker(
      async (job: Job<string>) => {
        ran.push(job.data);
        if (job.data === 'A') await blocked;
        return job.data;
      },
      { concurrency: 1 },
    );
    worker.on('error', () => undefined); // the LostLocksError reports
    const remote = worker.bindRemote(
      new BullMQSource<string, string>(queue.name, { connection: redis.connection, lockDuration: 1000, stalledInterval: 300, maxStalledCount: 5 }),
      { name: 'r', prefetch: 2 },
    );
    const admin = new Redis(redis.connection);
    try {
      await until('A runs and B, C are claimed', () => ran.length === 1 && remote.length === 2);
      // The claims of B and C end (as after an event-loop stall longer than the lock): BullMQ
      // gives them to whoever claims next.
      const unstarted = (await queue.getActive()).filter((job) => job.data !== 'A');
      expect(unstarted).toHaveLength(2);
      for (const job of unstarted) await admin.del(`bull:${queue.name}:${job.id}:lock`);
      await until('both losses seen by a renewal', () => remote.outage.lostLocks === 2, 10_000);
      await until('BullMQ moved them back to waiting', async () => (await queue.getJobCounts('wait')).wait === 2, 10_000);
      const lengthAfterLoss = remote.length;
      finish();
      await until('every job completed in BullMQ', async () => (await queue.getJobCounts('completed')).completed === 3, 15_000);
      await sleep(300);
      expect({ lengthAfterLoss, ran: [...ran].sort() }).toEqual({ lengthAfterLoss: 0, ran: ['A', 'B', 'C'] });
    } finally {
      finish();
      admin.disconnect();
      await worker.stop();
    }
  }, 40_000);

  // SPEC 9 Outcome: "success completes the remote job with the handler's result"; Lifecycle:
  // "stop() ... lets the running ones finish and records their outcomes remotely, closes the
  // source's connections, and resolves after all of that". BullMQ's own worker fails a job whose
  // return value JSON cannot serialize; qmux retries moveToCompleted forever (a TypeError reads as
  // "could not reach the engine"), renewing the lock between tries: the job stays active forever.
  it('fails in BullMQ a job whose result BullMQ cannot store as JSON (not left active), and stop() resolves', async () => {
    const queue = newQueue();
    await queue.add('big', 'big');
    const errors: unknown[] = [];
    const worker = new Worker((job: Job<string>) => (job.data === 'big' ? { n: 1n } : 'ok'), { concurrency: 1 });
    worker.on('error', (error) => errors.push(error));
    worker.bindRemote(new BullMQSource(queue.name, { connection: redis.connection, lockDuration: 1000, stalledInterval: 500 }), { name: 'r' });
    await until('it ran', () => worker.stats().counters.succeeded + worker.stats().counters.failed === 1);
    await sleep(5000);
    const counts = await queue.getJobCounts('active', 'completed', 'failed', 'wait');
    const outcome = await within(
      worker.stop().then(() => 'stopped'),
      10_000,
      'stop() still pending after 10 s',
    );
    expect({ stillActive: counts.active, outcome }).toEqual({ stillActive: 0, outcome: 'stopped' });
  }, 40_000);

  // README: "`stop()` resolves with Redis down too: the connections are then closed without
  // waiting for Redis." A release that cannot reach Redis loses nothing (the lock expires and
  // the stalled check hands the job back), yet it is retried forever and holds up stop().
  it('stop() resolves with Redis down while the source holds claimed, unstarted jobs', async () => {
    const own = await RedisServer.start();
    const queue = new Queue(`down${++queueCount}`, { connection: own.connection });
    queue.on('error', () => undefined);
    await queue.addBulk([1, 2, 3, 4, 5].map((i) => ({ name: 'j', data: i })));
    await queue.close();
    let finish = (): void => undefined;
    const blocked = new Promise<void>((resolve) => {
      finish = resolve;
    });
    const worker = new Worker(
      async (job: Job<unknown>) => {
        if (job.data === 'local') await blocked;
      },
      { concurrency: 1 },
    );
    worker.on('error', () => undefined);
    const local = worker.bindQueue({ priority: 1 });
    local.add('local'); // holds the only slot: the remote jobs stay claimed, unstarted
    const remote = worker.bindRemote(new BullMQSource(queue.name, { connection: own.connection }), { name: 'r', priority: 2, prefetch: 3 });
    try {
      await until('3 claimed', () => remote.length === 3);
      await own.stop();
      await until('degraded', () => worker.health().status === 'degraded', 10_000);
      const stopping = worker.stop();
      finish();
      const outcome = await within(
        stopping.then(() => 'stopped'),
        10_000,
        'stop() still pending after 10 s',
      );
      expect(outcome).toBe('stopped');
    } finally {
      finish();
      await own.destroy();
    }
  }, 40_000);
});
