/**
 * An in-memory remote engine for the adapter contract tests (SPEC 9): jobs wait, are claimed
 * with a lease that expires unless extended, and are completed, failed (retried while attempts
 * remain) or released, like a BullMQ queue without Redis. Every call is logged, and the engine
 * can be taken down (every call rejects, a pending claim too) and brought back.
 */
import { LockLostError, type RemoteAdapter, type RemoteJob } from '../../src/index.js';

export interface MemoryJob extends RemoteJob {
  /** The consumer holding it and its lease token. */
  lease: number;
}

interface Stored {
  id: string;
  data: unknown;
  attemptsMade: number;
  maxAttempts: number;
  /** Lease token while active; 0 otherwise. */
  lease: number;
  expiresAt: number;
}

export class MemoryEngine {
  readonly waiting: Stored[] = [];
  readonly active = new Map<string, Stored>();
  readonly completed = new Map<string, unknown>();
  readonly failed = new Map<string, { message: string; attemptsMade: number }>();
  /** Every call any adapter made, in order: `claim(2)`, `complete(j1)`... */
  readonly log: string[] = [];
  /** How many times each id was handed out. */
  readonly deliveries = new Map<string, number>();
  down = false;
  #nextId = 1;
  #nextLease = 1;
  #wakers = new Set<() => void>();

  add(data: unknown, options: { id?: string; attempts?: number } = {}): string {
    const id = options.id ?? `m${this.#nextId++}`;
    this.waiting.push({ id, data, attemptsMade: 0, maxAttempts: options.attempts ?? 1, lease: 0, expiresAt: 0 });
    this.wake();
    return id;
  }

  /** Expired leases go back to waiting (BullMQ's stalled check). */
  expireLeases(now = Date.now()): number {
    let expired = 0;
    for (const [id, job] of this.active) {
      if (job.expiresAt <= now) {
        this.active.delete(id);
        job.lease = 0;
        this.waiting.push(job);
        expired++;
      }
    }
    if (expired > 0) this.wake();
    return expired;
  }

  setDown(down: boolean): void {
    this.down = down;
    this.wake();
  }

  /** A consumer; its types follow the worker it is bound to (the data is whatever was added). */
  adapter<T = unknown, R = unknown>(options: { lockDuration?: number; name?: string } = {}): MemoryAdapter<T, R> {
    return new MemoryAdapter<T, R>(this, options.lockDuration ?? 30_000, options.name ?? 'consumer');
  }

  // ---- used by adapters

  take(max: number, lockDuration: number): MemoryJob[] {
    const jobs: MemoryJob[] = [];
    while (jobs.length < max && this.waiting.length > 0) {
      const stored = this.waiting.shift() as Stored;
      stored.lease = this.#nextLease++;
      stored.expiresAt = Date.now() + lockDuration;
      this.active.set(stored.id, stored);
      this.deliveries.set(stored.id, (this.deliveries.get(stored.id) ?? 0) + 1);
      jobs.push({ id: stored.id, data: stored.data, attempt: stored.attemptsMade + 1, maxAttempts: stored.maxAttempts, lease: stored.lease });
    }
    return jobs;
  }

  holder(job: MemoryJob, call: string): Stored {
    const stored = this.active.get(job.id);
    if (stored === undefined || stored.lease !== job.lease) throw new LockLostError(job.id, call);
    return stored;
  }

  waitForWork(signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      const done = (): void => {
        this.#wakers.delete(done);
        signal.removeEventListener('abort', done);
        resolve();
      };
      this.#wakers.add(done);
      signal.addEventListener('abort', done);
    });
  }

  /** Wakes the claims waiting for work. */
  wake(): void {
    for (const waker of [...this.#wakers]) waker();
  }
}

export class MemoryAdapter<T = unknown, R = unknown> implements RemoteAdapter<T, R> {
  readonly lockDuration: number;
  readonly name: string;
  readonly engine: MemoryEngine;
  claimsInFlight = 0;
  maxClaimsInFlight = 0;
  /** Every `max` asked for. */
  readonly claimSizes: number[] = [];
  closes = 0;
  open = false;
  /** Fails the next N outcome calls (complete / fail) as if the engine were unreachable. */
  failNextOutcomes = 0;
  watcher: ((error: unknown) => void) | undefined = undefined;

  constructor(engine: MemoryEngine, lockDuration: number, name: string) {
    this.engine = engine;
    this.lockDuration = lockDuration;
    this.name = name;
  }

  #check(call: string): void {
    if (this.engine.down) throw new Error(`engine down (${call})`);
  }

  async claim(max: number, signal: AbortSignal): Promise<readonly RemoteJob<T>[]> {
    this.claimSizes.push(max);
    this.claimsInFlight++;
    this.maxClaimsInFlight = Math.max(this.maxClaimsInFlight, this.claimsInFlight);
    try {
      this.open = true;
      for (;;) {
        this.#check('claim');
        if (signal.aborted) return [];
        const jobs = this.engine.take(max, this.lockDuration);
        if (jobs.length > 0) {
          this.engine.log.push(`${this.name} claim ${jobs.map((j) => j.id).join(',')}`);
          return jobs as RemoteJob<T>[];
        }
        await this.engine.waitForWork(signal);
      }
    } finally {
      this.claimsInFlight--;
    }
  }

  async complete(job: RemoteJob<T>, result: R): Promise<void> {
    this.#check('complete');
    if (this.failNextOutcomes > 0) {
      this.failNextOutcomes--;
      throw new Error('connection reset (complete)');
    }
    const stored = this.engine.holder(job as MemoryJob, 'complete');
    this.engine.active.delete(stored.id);
    this.engine.completed.set(stored.id, result);
    this.engine.log.push(`${this.name} complete ${job.id}`);
  }

  async fail(job: RemoteJob<T>, error: unknown): Promise<void> {
    this.#check('fail');
    if (this.failNextOutcomes > 0) {
      this.failNextOutcomes--;
      throw new Error('connection reset (fail)');
    }
    const stored = this.engine.holder(job as MemoryJob, 'fail');
    this.engine.active.delete(stored.id);
    stored.attemptsMade++;
    stored.lease = 0;
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    if (stored.attemptsMade < stored.maxAttempts) this.engine.waiting.push(stored);
    else this.engine.failed.set(stored.id, { message, attemptsMade: stored.attemptsMade });
    this.engine.log.push(`${this.name} fail ${job.id} ${message}`);
    this.engine.wake();
  }

  async release(job: RemoteJob<T>): Promise<void> {
    this.#check('release');
    const stored = this.engine.holder(job as MemoryJob, 'release');
    this.engine.active.delete(stored.id);
    stored.lease = 0;
    this.engine.waiting.unshift(stored);
    this.engine.log.push(`${this.name} release ${job.id}`);
    this.engine.wake();
  }

  async extend(jobs: readonly RemoteJob<T>[]): Promise<readonly RemoteJob<T>[]> {
    this.#check('extend');
    this.engine.log.push(`${this.name} extend ${jobs.map((j) => j.id).join(',')}`);
    const lost: RemoteJob<T>[] = [];
    for (const job of jobs) {
      const stored = this.engine.active.get(job.id);
      if (stored === undefined || stored.lease !== (job as MemoryJob).lease) lost.push(job);
      else stored.expiresAt = Date.now() + this.lockDuration;
    }
    return lost;
  }

  watch(listener: (error: unknown) => void): void {
    this.watcher = listener;
  }

  async close(): Promise<void> {
    this.closes++;
    this.open = false;
    this.engine.log.push(`${this.name} close`);
  }
}
