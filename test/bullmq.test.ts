/**
 * BullMQSource against a real redis-server (SPEC 9): one server for this file, started on a free
 * loopback port without persistence and stopped afterwards. Without redis-server these tests are
 * skipped with a notice, unless QMUX_REQUIRE_REDIS=1 (CI), which fails them instead. Real time:
 * every wait is on a cause (queue counts, process output) with a generous bound.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { FlowProducer, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BullMQSource } from '../src/bullmq/index.js';
import { RemoteSourceError, Strategy, Worker, type Job } from '../src/index.js';
import { freePort, RedisServer, redisAvailable } from './support/redis-server.js';
import { sleep, until } from './support/until.js';

const available = redisAvailable();

/** `'stopped'` once `worker.stop()` resolves, if it does within 10 s. */
function stopWithin10s(worker: { stop(): Promise<void> }): Promise<string> {
  return within(
    worker.stop().then(() => 'stopped'),
    10_000,
    'stop() still pending after 10 s',
  );
}

/** What `promise` settles to within `ms`, else `pending`. */
function within<V>(promise: Promise<V>, ms: number, pending: string): Promise<V | string> {
  return Promise.race([promise, sleep(ms).then(() => pending)]);
}

let queueCount = 0;

/**
 * A Redis server of the test's own (to stop under a worker) holding a queue of `data`, one job
 * each, whose producer connection is closed already: the caller destroys the server.
 */
async function jobsOnARedisOfTheirOwn(prefix: string, data: number[]): Promise<{ own: RedisServer; queue: Queue }> {
  const own = await RedisServer.start();
  const queue = new Queue(`${prefix}${++queueCount}`, { connection: own.connection });
  queue.on('error', () => undefined);
  await queue.addBulk(data.map((item) => ({ name: 'j', data: item })));
  await queue.close();
  return { own, queue };
}

describe.runIf(available)('BullMQSource on a real Redis', () => {
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
    const queue = new Queue(`q${++queueCount}`, { connection: redis.connection });
    queue.on('error', () => undefined); // the producer sees the outage test's refused connections too
    queues.push(queue);
    return queue;
  }

  /** A source for `queue`; its types follow the worker it is bound to (BullMQ's data is whatever the producer added). */
  function source<T, R>(queue: Queue, options: { lockDuration?: number; stalledInterval?: number } = {}): BullMQSource<T, R> {
    return new BullMQSource<T, R>(queue.name, { connection: redis.connection, ...options });
  }

  it("runs jobs added with BullMQ's Queue.add and records results and failures (after their attempts) in BullMQ", async () => {
    const queue = newQueue();
    await queue.add('double', { n: 21 });
    await queue.add('boom', { n: -1 }, { attempts: 2 });
    const events: string[] = [];
    const worker = new Worker(async (job: Job<{ n: number }>) => {
      if (job.data.n < 0) throw new Error(`negative on attempt ${job.attempt}`);
      return job.data.n * 2;
    });
    worker.on('retrying', (job, _error, delay) => events.push(`retrying ${job.id} ${String(delay)}`));
    worker.on('failed', (job) => events.push(`failed ${job.id}`));
    worker.bindRemote(source(queue));
    await until('one completed and one failed', async () => {
      const counts = await queue.getJobCounts('completed', 'failed');
      return counts.completed === 1 && counts.failed === 1;
    });
    const [completed] = await queue.getCompleted();
    expect(completed?.returnvalue).toBe(42);
    const [failed] = await queue.getFailed();
    expect(failed?.failedReason).toBe('negative on attempt 2');
    expect(failed?.attemptsMade).toBe(2);
    expect(events).toEqual([`retrying ${failed?.id} undefined`, `failed ${failed?.id}`]);
    await worker.stop();
  });

  it('Priority: local jobs first, then the remote backlog', async () => {
    const queue = newQueue();
    await queue.addBulk([1, 2, 3].map((i) => ({ name: 'r', data: `r${i}` })));
    const order: string[] = [];
    const worker = new Worker((job: Job<string>) => void order.push(job.data), { concurrency: 1, autoRun: false });
    const local = worker.bindQueue({ priority: 1 });
    const remote = worker.bindRemote(source(queue), { priority: 2, prefetch: 3 });
    for (const i of [1, 2, 3]) local.add(`l${i}`);
    worker.start();
    await until('6 jobs ran', () => order.length === 6);
    expect(order.slice(0, 3)).toEqual(['l1', 'l2', 'l3']);
    expect(order.slice(3).sort()).toEqual(['r1', 'r2', 'r3']);
    expect(remote.length).toBe(0);
    await worker.stop();
  });

  it('Weighted 3:1: three remote starts for each local one while both have work', async () => {
    const queue = newQueue();
    await queue.addBulk(Array.from({ length: 60 }, () => ({ name: 'r', data: 'R' })));
    const order: string[] = [];
    const worker = new Worker(
      async (job: Job<string>) => {
        order.push(job.data);
        await new Promise((resolve) => setTimeout(resolve, 2));
      },
      { concurrency: 1, strategy: Strategy.Weighted },
    );
    const local = worker.bindQueue({ weight: 1 });
    for (let i = 0; i < 20; i++) local.add('L');
    worker.bindRemote(source(queue), { weight: 3, prefetch: 4 });
    await until('40 jobs ran', () => order.length >= 40);
    // Once the first claim has come back, the remote source is never empty: shares are exact.
    const steady = order.slice(order.indexOf('R'), order.indexOf('R') + 32);
    expect(steady.filter((x) => x === 'R').length).toBe(24);
    await worker.stop();
  });

  it('stop() with claimed, unstarted jobs hands them back, and another consumer runs them', async () => {
    const queue = newQueue();
    await queue.addBulk(Array.from({ length: 6 }, (_, i) => ({ name: 'j', data: i })));
    let release: () => void = () => undefined;
    const blocked = new Promise<void>((resolve) => {
      release = resolve;
    });
    const first = new Worker(() => blocked, { concurrency: 1 });
    const claimed = first.bindRemote(source(queue), { prefetch: 4 });
    await until('4 claimed and 1 running', () => claimed.length === 4 && first.numProcessing === 1);
    const stopping = first.stop();
    await until('the claimed ones are back in waiting', async () => (await queue.getJobCounts('wait')).wait === 5);
    release();
    await stopping;
    const ran: number[] = [];
    const second = new Worker((job: Job<number>) => void ran.push(job.data), { concurrency: 2 });
    second.bindRemote(source(queue));
    await until('all 6 completed', async () => (await queue.getJobCounts('completed')).completed === 6);
    expect(ran.sort()).toEqual([1, 2, 3, 4, 5]);
    await second.stop();
  });

  it('Redis unavailable under load, then back: degraded naming the source, one report, then healthy; nothing lost', async () => {
    const queue = newQueue();
    const total = 400;
    await queue.addBulk(Array.from({ length: total }, (_, i) => ({ name: 'j', data: i })));
    const errors: unknown[] = [];
    const uncaught: unknown[] = [];
    const onUncaught = (error: unknown): void => void uncaught.push(error);
    process.on('uncaughtException', onUncaught);
    process.on('unhandledRejection', onUncaught);
    const done = new Set<number>();
    const worker = new Worker(
      async (job: Job<number>) => {
        await new Promise((resolve) => setTimeout(resolve, 5));
        done.add(job.data);
      },
      { concurrency: 8 },
    );
    worker.on('error', (error) => errors.push(error));
    // A claim whose answer the outage swallowed has moved its jobs to active in Redis, locked by
    // tokens no consumer knows: they come back once their lock expires and a stalled check runs.
    // Short ones keep that within the test's bound (BullMQ's defaults would take up to a minute).
    worker.bindRemote(source(queue, { lockDuration: 5_000, stalledInterval: 1_000 }), { name: 'shared' });
    try {
      await until('some jobs ran', () => done.size > 50);
      const stoppedAt = Date.now();
      await redis.stop({ keepData: true });
      await until('degraded', () => worker.health().status === 'degraded', 10_000);
      expect(Date.now() - stoppedAt).toBeLessThan(10_000);
      expect(worker.health().reason).toContain('remote source "shared"');
      await new Promise((resolve) => setTimeout(resolve, 1500)); // the outage goes on: still one report
      expect(errors.filter((error) => error instanceof RemoteSourceError)).toHaveLength(1);
      await redis.restart();
      const backAt = Date.now();
      await until('healthy again', () => worker.health().status === 'healthy', 10_000);
      expect(Date.now() - backAt).toBeLessThan(10_000);
      await until('every job completed in BullMQ', async () => (await queue.getJobCounts('completed')).completed === total, 30_000);
      expect(done.size).toBe(total);
      expect(errors.filter((error) => error instanceof RemoteSourceError)).toHaveLength(1);
      expect(uncaught).toEqual([]);
    } finally {
      process.off('uncaughtException', onUncaught);
      process.off('unhandledRejection', onUncaught);
      if (!redis.running) await redis.restart();
      await worker.stop();
    }
  }, 60_000);

  it('a paused worker claims nothing: a job added while it is paused stays waiting, and runs once after resume()', async () => {
    const queue = newQueue();
    const runs: string[] = [];
    const worker = new Worker((job: Job<number>) => void runs.push(job.id));
    worker.on('error', () => undefined);
    worker.bindRemote(source(queue));
    await until('the blocking fetch waits', async () => (await queue.getJobCounts('wait')).wait === 0);
    await new Promise((resolve) => setTimeout(resolve, 300));
    worker.pause();
    await new Promise((resolve) => setTimeout(resolve, 200));
    await queue.add('j', 1);
    await new Promise((resolve) => setTimeout(resolve, 1000)); // a fetch left waiting would have claimed it by now
    expect(await queue.getJobCounts('wait', 'active')).toEqual({ wait: 1, active: 0 });
    worker.resume();
    await until('completed', async () => (await queue.getJobCounts('completed')).completed === 1);
    expect(runs).toHaveLength(1);
    await worker.stop();
  }, 30_000);

  it('a paused worker whose job still runs claims nothing either', async () => {
    const queue = newQueue();
    await queue.add('a', 1);
    let finish = (): void => undefined;
    const started: number[] = [];
    const worker = new Worker(
      (job: Job<number>) => {
        started.push(job.data);
        if (job.data !== 1) return undefined;
        return new Promise<void>((resolve) => {
          finish = resolve;
        });
      },
      { concurrency: 1 },
    );
    worker.on('error', () => undefined);
    worker.bindRemote(source(queue, { lockDuration: 2000 }), { prefetch: 1 });
    await until('a started', () => started.length === 1);
    await new Promise((resolve) => setTimeout(resolve, 200)); // the refill is a blocking fetch now
    worker.pause(); // a still runs
    await new Promise((resolve) => setTimeout(resolve, 200));
    await queue.add('b', 2);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await queue.getJobCounts('wait', 'active')).toEqual({ wait: 1, active: 1 });
    finish();
    worker.resume();
    await until('both completed', async () => (await queue.getJobCounts('completed')).completed === 2);
    expect(started).toEqual([1, 2]);
    await worker.stop();
  }, 30_000);

  it('a script whose worker is paused with a remote source bound exits by itself (no connection is kept)', async () => {
    const queue = newQueue();
    await queue.add('j', 1);
    const fixture = new URL('./fixtures/bullmq-paused.mjs', import.meta.url).pathname;
    const child = spawn(process.execPath, [fixture, String(redis.port), queue.name], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const code = await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve('still running'), 20_000))]);
    if (code === 'still running') child.kill('SIGKILL');
    expect(out).toContain('paused');
    expect(code, out).toBe(0);
    expect(await queue.getJobCounts('completed')).toEqual({ completed: 1 });
  }, 30_000);

  it('records no lost lock for a job whose outcome was being recorded when its claim was renewed', async () => {
    const queue = newQueue();
    const total = 600;
    await queue.addBulk(Array.from({ length: total }, (_, i) => ({ name: 'j', data: i })));
    const errors: unknown[] = [];
    const worker = new Worker(() => new Promise((resolve) => setTimeout(resolve, 5)), { concurrency: 8 });
    worker.on('error', (error) => errors.push(error));
    // Renewed every 125 ms: many renewals cross outcome calls. (A real loss needs a stall of 250 ms.)
    const remote = worker.bindRemote(source(queue, { lockDuration: 250 }), { name: 'short' });
    await until('all completed', async () => (await queue.getJobCounts('completed')).completed === total, 30_000);
    const done = await queue.getCompleted(0, total);
    expect(done.every((job) => job.attemptsMade === 1)).toBe(true);
    expect(remote.outage.lostLocks).toBe(0);
    expect(errors).toEqual([]);
    await worker.stop();
  }, 40_000);

  it("emits failed, not retrying, for a job that throws BullMQ's UnrecoverableError with attempts left", async () => {
    const { UnrecoverableError } = await import('bullmq');
    const queue = newQueue();
    await queue.add('j', 1, { attempts: 3 });
    const events: string[] = [];
    const worker = new Worker(() => {
      throw new UnrecoverableError('fatal');
    });
    worker.on('retrying', (job) => events.push(`retrying ${job.id}`));
    worker.on('failed', (job) => events.push(`failed ${job.id}`));
    worker.bindRemote(source(queue));
    await until('failed in BullMQ', async () => (await queue.getJobCounts('failed')).failed === 1);
    const [failed] = await queue.getFailed();
    expect(failed?.attemptsMade).toBe(1);
    await until('the event', () => events.length > 0);
    expect(events).toEqual([`failed ${failed?.id}`]);
    await worker.stop();
  });

  it('Redis unreachable: pausing neither ends the outage nor makes resume() report a second one, and stop() resolves', async () => {
    const errors: unknown[] = [];
    const worker = new Worker(() => undefined);
    worker.on('error', (error) => errors.push(error));
    const port = await freePort(); // nothing listens there
    worker.bindRemote(new BullMQSource('nowhere', { connection: { host: '127.0.0.1', port, maxRetriesPerRequest: null } }), { name: 'down' });
    await until('degraded', () => worker.health().status === 'degraded', 10_000);
    worker.pause();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const whilePaused = worker.health().status;
    worker.resume();
    await new Promise((resolve) => setTimeout(resolve, 2000));
    expect({ whilePaused, afterResume: worker.health().status, reports: errors.length }).toEqual({
      whilePaused: 'degraded',
      afterResume: 'degraded',
      reports: 1,
    });
    const outcome = await Promise.race([
      worker.stop().then(() => 'stopped'),
      new Promise((resolve) => setTimeout(() => resolve('stop() still pending'), 10_000)),
    ]);
    expect(outcome).toBe('stopped');
  }, 30_000);

  it('stop() resolves when Redis went away while the worker idled', async () => {
    const { own, queue } = await jobsOnARedisOfTheirOwn('drop', [1]);
    const worker = new Worker(() => 'x');
    worker.on('error', () => undefined);
    worker.bindRemote(new BullMQSource(queue.name, { connection: own.connection }), { name: 'r' });
    try {
      await until('the job ran', () => worker.stats().counters.succeeded === 1);
      await new Promise((resolve) => setTimeout(resolve, 300));
      await own.stop();
      await until('degraded', () => worker.health().status === 'degraded', 10_000);
      const outcome = await Promise.race([
        worker.stop().then(() => 'stopped'),
        new Promise((resolve) => setTimeout(() => resolve('stop() still pending'), 10_000)),
      ]);
      expect(outcome).toBe('stopped');
    } finally {
      await own.destroy();
    }
  }, 30_000);

  it('three consumer processes, one SIGKILLed mid-run: every job completes, only jobs of the killed one run twice', async () => {
    const queue = newQueue();
    const total = 1500;
    await queue.addBulk(Array.from({ length: total }, (_, i) => ({ name: 'j', data: { i, ms: 3 } })));
    const fixture = new URL('./fixtures/bullmq-consumer.mjs', import.meta.url).pathname;
    const runs = new Map<string, string[]>(); // job id -> consumers that started it
    const children: { name: string; child: ChildProcess; out: string; exited: Promise<number | null> }[] = [];
    for (const name of ['a', 'b', 'c']) {
      const child = spawn(process.execPath, [fixture, String(redis.port), queue.name, '1000', '300'], { stdio: ['ignore', 'pipe', 'pipe'] });
      const entry = { name, child, out: '', exited: new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code))) };
      let partial = '';
      child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
        entry.out += chunk;
        const lines = (partial + chunk).split('\n');
        partial = lines.pop() ?? '';
        for (const line of lines) {
          if (!line.startsWith('ran ')) continue;
          const id = line.slice(4);
          runs.set(id, [...(runs.get(id) ?? []), name]);
        }
      });
      child.stderr?.resume();
      children.push(entry);
    }
    try {
      await until('a third of the jobs done', async () => (await queue.getJobCounts('completed')).completed >= total / 3, 30_000);
      const victim = children[0] as (typeof children)[number];
      victim.child.kill('SIGKILL');
      await victim.exited;
      await until('every job completed', async () => (await queue.getJobCounts('completed')).completed === total, 40_000);
      const counts = await queue.getJobCounts('wait', 'active', 'failed', 'delayed');
      expect(counts).toMatchObject({ wait: 0, active: 0, failed: 0, delayed: 0 });
      expect(runs.size).toBe(total);
      const twice = [...runs].filter(([, by]) => by.length > 1);
      for (const [id, by] of twice) expect(by, `job ${id} ran more than once`).toContain('a');
      for (const [, by] of twice) expect(by.filter((who) => who !== 'a').length).toBeLessThanOrEqual(1);
      // The survivors stop their workers on SIGTERM and exit by themselves: no connection is left open.
      for (const survivor of children.slice(1)) survivor.child.kill('SIGTERM');
      const codes = await Promise.all(children.slice(1).map((survivor) => survivor.exited));
      expect(codes).toEqual([0, 0]);
      for (const survivor of children.slice(1)) expect(survivor.out).toContain('stopped');
    } finally {
      for (const { child } of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  }, 90_000);

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
  it("a flow parent whose child failed with failParentOnFailure fails in BullMQ unrun, as under BullMQ's own Worker; the source stays healthy", async () => {
    const queue = newQueue();
    const flow = new FlowProducer({ connection: redis.connection });
    try {
      await flow.add({
        name: 'parent',
        queueName: queue.name,
        data: { role: 'parent' },
        opts: { jobId: 'parent' },
        children: [{ name: 'child', queueName: queue.name, data: { role: 'child' }, opts: { jobId: 'child', failParentOnFailure: true } }],
      });
      const ran: string[] = [];
      const errors: unknown[] = [];
      const worker = new Worker(
        (job: Job<{ role: string }>) => {
          ran.push(job.data.role);
          if (job.data.role === 'child') throw new Error('child fails');
          return 'parent done';
        },
        { concurrency: 1 },
      );
      worker.on('error', (error) => errors.push(error));
      worker.bindRemote(source(queue), { name: 'flow' });
      await until('the parent failed in BullMQ', async () => (await queue.getJob('parent'))?.failedReason !== undefined);
      expect(await (await queue.getJob('parent'))?.getState()).toBe('failed');
      expect(ran).toEqual(['child']);
      expect(worker.health().status).toBe('healthy');
      expect(errors).toEqual([]);
      expect(await stopWithin10s(worker)).toBe('stopped');
    } finally {
      await flow.close();
    }
  }, 40_000);

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
    const outcome = await stopWithin10s(worker);
    expect({ stillActive: counts.active, outcome }).toEqual({ stillActive: 0, outcome: 'stopped' });
  }, 40_000);

  // docs/outgrowing-one-process.md: release "hands an unstarted job back ... without counting an attempt". BullMQ's
  // moveToWait keeps the start its claim counted (attemptsStarted), so with maxStartedAttempts a
  // job handed back a few times (pause, stop, purge) failed without ever running.
  it('a claimed job handed back (pause, resume) counts no start: it runs once, under maxStartedAttempts, started once', async () => {
    const queue = newQueue();
    const added = await queue.add('j', 1, { attempts: 5 });
    let finish = (): void => undefined;
    const blocked = new Promise<void>((resolve) => {
      finish = resolve;
    });
    const ran: unknown[] = [];
    const worker = new Worker(
      async (job: Job<unknown>) => {
        if (job.data === 'local') return blocked;
        ran.push(job.data);
      },
      { concurrency: 1 },
    );
    worker.on('error', () => undefined);
    worker.bindQueue({ priority: 1 }).add('local'); // holds the only slot: the remote job stays claimed
    const remote = worker.bindRemote(new BullMQSource(queue.name, { connection: redis.connection, maxStartedAttempts: 2 }), {
      name: 'r',
      prefetch: 1,
    });
    try {
      for (let round = 0; round < 3; round++) {
        await until('claimed', () => remote.length === 1);
        worker.pause(); // hands it back
        await until(
          'back in wait',
          async () => (await queue.getJob(added.id as string))?.attemptsStarted === 0 && (await queue.getWaitingCount()) === 1,
        );
        worker.resume();
      }
      await until('claimed again', () => remote.length === 1);
      finish();
      await until('completed', async () => (await queue.getJobCounts('completed')).completed === 1);
      expect(ran).toEqual([1]);
      expect((await queue.getJob(added.id as string))?.attemptsStarted).toBe(1);
    } finally {
      finish();
      await worker.stop();
    }
  }, 40_000);

  it('a hand-back tried again after moveToWait failed takes back one start, not two; after close() it opens no new connection', async () => {
    const queue = newQueue();
    const added = await queue.add('j', 1);
    const jobKey = `bull:${queue.name}:${added.id}`;
    const admin = new Redis(redis.connection);
    const adapter = source<number, unknown>(queue);
    try {
      await admin.hset(jobKey, 'ats', 2); // started twice before
      const [claimed] = await adapter.claim(1, new AbortController().signal);
      expect(await admin.hget(jobKey, 'ats')).toBe('3');
      const job = (claimed as unknown as { job: { moveToWait(token: string): Promise<unknown> } }).job;
      const moveToWait = job.moveToWait.bind(job);
      let failOnce = true;
      job.moveToWait = (token) => {
        if (!failOnce) return moveToWait(token);
        failOnce = false;
        return Promise.reject(new Error('the connection dropped'));
      };
      await expect(adapter.release(claimed as never)).rejects.toThrow('the connection dropped');
      await adapter.release(claimed as never);
      expect([await admin.hget(jobKey, 'ats'), await queue.getWaitingCount()]).toEqual(['2', 1]);
      // Claimed again, then the adapter closes: handing back goes through the job's own (closed)
      // connection and fails, rather than opening the adapter again.
      const [again] = await adapter.claim(1, new AbortController().signal);
      await adapter.close();
      await expect(adapter.release(again as never)).rejects.toThrow();
      expect(adapter.bullWorker).toBeUndefined();
    } finally {
      await adapter.close();
      admin.disconnect();
    }
  }, 40_000);

  // BullMQ works out a retry before it writes anything: a backoff this consumer has no strategy
  // for throws there, and retried the call failed for ever, the job held active, the source
  // degraded and stop() waiting. The attempt now fails the job for good, saying why.
  it('a failure BullMQ cannot work out a retry for (a backoff with no strategy) fails the job for good, saying why; nothing is left active', async () => {
    const queue = newQueue();
    await queue.add('bad', 1, { attempts: 3, backoff: { type: 'custom' } });
    await queue.add('fine', 2);
    const errors: unknown[] = [];
    const worker = new Worker(
      async (job: Job<number>) => {
        if (job.data === 1) throw new Error('fails');
        return 'ok';
      },
      { concurrency: 1 },
    );
    worker.on('error', (error) => errors.push(error));
    worker.bindRemote(source<number, string>(queue), { name: 'r' });
    await until('both recorded', async () => {
      const counts = await queue.getJobCounts('completed', 'failed');
      return counts.completed === 1 && counts.failed === 1;
    });
    const [failed] = await queue.getFailed();
    expect(failed?.failedReason).toMatch(/^fails \(not retried: Unknown backoff strategy custom/);
    expect(failed?.attemptsMade).toBe(1);
    expect((await queue.getJobCounts('active')).active).toBe(0);
    expect(worker.health().status).toBe('healthy');
    expect(errors).toEqual([]);
    expect(await stopWithin10s(worker)).toBe('stopped');
  }, 40_000);

  // SPEC 9: an outcome is retried "until it is recorded or the job's lock is known lost". With
  // Redis gone, BullMQ's client queues the call until it reconnects: the outcome never settled,
  // and stop() waited for it for ever. Unrecorded when its lock lapses, it is given up then.
  it("stop() resolves with Redis down while a finished job's outcome cannot be recorded, once its lock lapses", async () => {
    const { own, queue } = await jobsOnARedisOfTheirOwn('gone', [1]);
    let finish = (): void => undefined;
    const blocked = new Promise<void>((resolve) => {
      finish = resolve;
    });
    const worker = new Worker(async () => blocked.then(() => 'done'), { concurrency: 1 });
    const errors: unknown[] = [];
    worker.on('error', (error) => errors.push(error));
    worker.bindRemote(new BullMQSource(queue.name, { connection: own.connection, lockDuration: 2000 }), { name: 'r' });
    try {
      await until('it runs', () => worker.numProcessing === 1);
      await own.stop();
      finish(); // its outcome cannot reach Redis now
      await sleep(100);
      const stopping = worker.stop();
      const outcome = await within(
        stopping.then(() => 'stopped'),
        10_000, // the lock (2 s) lapses well before
        'stop() still pending after 10 s',
      );
      expect(outcome).toBe('stopped');
      expect(worker.status).toBe('stopped');
      expect(errors.map((error) => (error as Error).name)).toEqual(['RemoteSourceError']); // the outage, reported once
    } finally {
      finish();
      await own.destroy();
    }
  }, 40_000);

  // docs/outgrowing-one-process.md: "`stop()` resolves with Redis down too: the connections are then closed without
  // waiting for Redis." A release that cannot reach Redis loses nothing (the lock expires and
  // the stalled check hands the job back), yet it is retried forever and holds up stop().
  it('stop() resolves with Redis down while the source holds claimed, unstarted jobs', async () => {
    const { own, queue } = await jobsOnARedisOfTheirOwn('down', [1, 2, 3, 4, 5]);
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
