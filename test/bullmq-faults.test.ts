/**
 * BullMQSource under faults a bug hunt found (issue 33): a Redis that hangs (SIGSTOP: its
 * connections stay open and nothing answers), a job whose data is not JSON in a claim burst,
 * one adapter bound twice, a progress value JSON cannot store. Real time against a real
 * redis-server (skipped with a notice without one, failed under QMUX_REQUIRE_REDIS=1); every
 * wait is on a cause with a generous bound.
 */
import { spawn } from 'node:child_process';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BullMQSource } from '../src/bullmq/index.js';
import { RemoteSourceError, Worker, type Job } from '../src/index.js';
import { RedisServer, redisAvailable } from './support/redis-server.js';
import { sleep, until } from './support/until.js';

const available = redisAvailable();

/** How long `promise` took to settle, ms, or `'pending'` if it has not within `boundMs`. */
async function settlesWithin(promise: Promise<unknown>, boundMs: number): Promise<number | 'pending'> {
  const began = Date.now();
  return Promise.race([promise.then(() => Date.now() - began), sleep(boundMs).then(() => 'pending' as const)]);
}

/** The ioredis clients of an adapter's BullMQ worker (main and blocking), to see them closed. */
async function clientsOf<T>(adapter: BullMQSource<T, unknown>): Promise<Redis[]> {
  const backend = adapter.bullWorker?.getBackend() as unknown as { client: Promise<Redis>; blockingClient?: Promise<Redis> };
  return Promise.all([backend.client, ...(backend.blockingClient === undefined ? [] : [backend.blockingClient])]);
}

let queueCount = 0;

// Issue 33, defect 3: a second worker on one adapter had its connections closed under it when
// the first stopped. Binding never connects a worker that is not started: no Redis needed.
describe('one BullMQSource per worker', () => {
  it('binding a BullMQSource that is already bound throws a TypeError saying to make one per worker', async () => {
    const adapter = new BullMQSource('shared', { connection: { host: '127.0.0.1', port: 1, maxRetriesPerRequest: null } });
    const first = new Worker(() => undefined, { name: 'first', autoRun: false });
    const second = new Worker(() => undefined, { name: 'second', autoRun: false });
    first.bindRemote(adapter, { name: 'emails' });
    expect(() => second.bindRemote(adapter)).toThrow(TypeError);
    expect(() => second.bindRemote(adapter)).toThrow(
      'qmux: bindRemote(adapter): this adapter is already bound (worker "first", source "emails"); make one adapter per worker (for BullMQ, a new BullMQSource for each bindRemote)',
    );
    await first.stop();
    await second.stop();
  });
});

describe.runIf(available)('BullMQSource under faults (real Redis)', () => {
  let redis: RedisServer;
  const queues: Queue[] = [];

  beforeAll(async () => {
    redis = await RedisServer.start();
  });
  afterAll(async () => {
    redis?.thaw();
    await Promise.all(queues.map((queue) => queue.close()));
    await redis?.destroy();
  });

  function newQueue(): Queue {
    const queue = new Queue(`faults${++queueCount}`, { connection: redis.connection });
    queue.on('error', () => undefined);
    queues.push(queue);
    return queue;
  }

  // Issue 33, defect 2: the job that could not be read failed the whole claim, and the good jobs
  // it was fetched with stayed locked under tokens nobody renewed (some never ran).
  it('a job whose data is not JSON fails on its own, saying why; every other job of its claim burst runs', async () => {
    const queue = newQueue();
    const good = 39;
    const added = await queue.addBulk(Array.from({ length: good + 1 }, (_, i) => ({ name: 'j', data: { i } })));
    const bad = added[5]?.id as string;
    const admin = new Redis(redis.connection);
    await admin.hset(`bull:${queue.name}:${bad}`, 'data', '{"i": 5, oops');
    const ran = new Set<number>();
    const errors: unknown[] = [];
    const worker = new Worker(
      async (job: Job<{ i: number }>) => {
        await sleep(5);
        ran.add(job.data.i);
      },
      { concurrency: 4 },
    );
    worker.on('error', (error) => errors.push(error));
    worker.bindRemote(new BullMQSource(queue.name, { connection: redis.connection }), { name: 'burst', prefetch: 8 });
    try {
      await until('39 completed and 1 failed', async () => {
        const counts = await queue.getJobCounts('completed', 'failed');
        return counts.completed === good && counts.failed === 1;
      });
      // BullMQ's getJob cannot read it either: its hash, as stored.
      expect(await admin.hget(`bull:${queue.name}:${bad}`, 'failedReason')).toMatch(/^job data is not valid JSON: /);
      expect(ran.size).toBe(good);
      expect(ran.has(5)).toBe(false);
      expect(await queue.getJobCounts('active', 'wait')).toEqual({ active: 0, wait: 0 });
      expect(errors).toEqual([]);
      expect(worker.health().status).toBe('healthy');
    } finally {
      admin.disconnect();
      await worker.stop();
    }
  }, 30_000);

  // Issue 33, defect 6, against BullMQ itself: its updateProgress throws for such a value.
  it('updateProgress with a BigInt or a cycle throws a TypeError in the handler; the source stays healthy and the job completes', async () => {
    const queue = newQueue();
    await queue.add('j', 1);
    const thrown: unknown[] = [];
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    const worker = new Worker(async (job: Job<number>) => {
      for (const bad of [10n, cycle]) {
        try {
          job.updateProgress(bad as object);
        } catch (error) {
          thrown.push(error);
        }
      }
      job.updateProgress(50);
      await sleep(50);
      return 'ok';
    });
    const errors: unknown[] = [];
    worker.on('error', (error) => errors.push(error));
    worker.on('degraded', (error) => errors.push(error));
    worker.bindRemote(new BullMQSource(queue.name, { connection: redis.connection }), { name: 'r' });
    try {
      await until('completed', async () => (await queue.getJobCounts('completed')).completed === 1);
      const [done] = await queue.getCompleted();
      expect({ progress: done?.progress, thrown: thrown.map((error) => (error as Error).name), errors }).toEqual({
        progress: 50,
        thrown: ['TypeError', 'TypeError'],
        errors: [],
      });
      expect(worker.health().status).toBe('healthy');
    } finally {
      await worker.stop();
    }
  }, 30_000);

  describe('a hung Redis (SIGSTOP)', () => {
    // Issue 33, defect 1: stop() and close() waited on the hung connection for ever, and the open
    // connection kept the process alive.
    // An outcome is given up once its lock has lapsed and its call has gone unanswered for 5 s
    // (a Redis that is only slow is waited for); then the hung connections are destroyed.
    it('stop() with jobs running resolves within about the lock duration, and closes the connections; the jobs run elsewhere after', async () => {
      const queue = newQueue();
      await queue.addBulk(Array.from({ length: 6 }, (_, i) => ({ name: 'j', data: i })));
      let finish = (): void => undefined;
      const blocked = new Promise<void>((resolve) => {
        finish = resolve;
      });
      const lockDuration = 4000;
      const worker = new Worker(() => blocked, { concurrency: 2 });
      worker.on('error', () => undefined);
      // A short stalled check: the next consumer's check comes no sooner than this one's interval.
      const adapter = new BullMQSource<number, unknown>(queue.name, { connection: redis.connection, lockDuration, stalledInterval: 300 });
      const remote = worker.bindRemote(adapter, { name: 'hung', prefetch: 2 });
      let second: Worker<number> | undefined;
      try {
        await until('2 running and 2 claimed', () => worker.numProcessing === 2 && remote.length === 2);
        const clients = await clientsOf(adapter);
        redis.freeze();
        const stopping = worker.stop();
        finish(); // the outcomes go to a Redis that does not answer
        const took = await settlesWithin(stopping, 15_000);
        expect(took).not.toBe('pending');
        expect(took as number).toBeLessThan(Math.max(lockDuration, 5000) + 2500);
        expect(worker.status).toBe('stopped');
        expect(clients.map((client) => client.status)).toEqual(clients.map(() => 'end'));
        redis.thaw();
        // Nothing is lost: what the stopped worker held comes back once its locks lapse.
        const ran = new Set<number>();
        second = new Worker((job: Job<number>) => void ran.add(job.data), { concurrency: 4 });
        second.on('error', () => undefined);
        second.bindRemote(new BullMQSource<number, unknown>(queue.name, { connection: redis.connection, stalledInterval: 300 }));
        await until('all 6 completed', async () => (await queue.getJobCounts('completed')).completed === 6, 20_000);
      } finally {
        finish();
        redis.thaw();
        await worker.stop();
        await second?.stop();
      }
    }, 40_000);

    it('stop() of an idle worker (its blocking fetch waiting) resolves within 5 s, and closes the connections', async () => {
      const queue = newQueue();
      const worker = new Worker(() => undefined);
      const errors: unknown[] = [];
      worker.on('error', (error) => errors.push(error));
      const adapter = new BullMQSource(queue.name, { connection: redis.connection });
      worker.bindRemote(adapter, { name: 'idle' });
      try {
        await until('connected', async () => adapter.bullWorker !== undefined && (await clientsOf(adapter)).every((c) => c.status === 'ready'));
        await sleep(300); // the blocking fetch waits
        const clients = await clientsOf(adapter);
        redis.freeze();
        const took = await settlesWithin(worker.stop(), 15_000);
        expect(took).not.toBe('pending');
        expect(took as number).toBeLessThan(5000 + 2000);
        expect(clients.map((client) => client.status)).toEqual(clients.map(() => 'end'));
        expect(errors.filter((error) => !(error instanceof RemoteSourceError))).toEqual([]);
      } finally {
        redis.thaw();
        await worker.stop();
      }
    }, 30_000);

    it('a script that stops its idle worker on SIGTERM exits by itself while Redis hangs (no connection is left open)', async () => {
      const queue = newQueue();
      await queue.add('j', 1);
      const fixture = new URL('./fixtures/bullmq-hung.mjs', import.meta.url).pathname;
      const child = spawn(process.execPath, [fixture, String(redis.port), queue.name], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
      child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
      const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
      try {
        await until('ready', () => out.includes('ready'));
        redis.freeze();
        child.kill('SIGTERM');
        const code = await Promise.race([exited, sleep(15_000).then(() => 'still running')]);
        expect(out).toContain('stopped');
        expect(code, out).toBe(0);
      } finally {
        redis.thaw();
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }
    }, 30_000);

    it('RemoteSource.close() resolves within about the lock duration (5 s at least), with claimed jobs and running ones', async () => {
      const queue = newQueue();
      await queue.addBulk(Array.from({ length: 4 }, (_, i) => ({ name: 'j', data: i })));
      let finish = (): void => undefined;
      const blocked = new Promise<void>((resolve) => {
        finish = resolve;
      });
      const lockDuration = 3000;
      const worker = new Worker(() => blocked, { concurrency: 1 });
      worker.on('error', () => undefined);
      const adapter = new BullMQSource<number, unknown>(queue.name, { connection: redis.connection, lockDuration });
      const remote = worker.bindRemote(adapter, { name: 'closing', prefetch: 2 });
      try {
        await until('1 running and 2 claimed', () => worker.numProcessing === 1 && remote.length === 2);
        const clients = await clientsOf(adapter);
        redis.freeze();
        const closing = remote.close();
        finish();
        const took = await settlesWithin(closing, 15_000);
        expect(took).not.toBe('pending');
        expect(took as number).toBeLessThan(Math.max(lockDuration, 5000) + 2500);
        expect(Object.keys(worker.stats().sources)).toEqual([]);
        expect(clients.map((client) => client.status)).toEqual(clients.map(() => 'end'));
      } finally {
        finish();
        redis.thaw();
        await worker.stop();
      }
    }, 30_000);
  });
});
