/**
 * Small tools the test files share: promises settled from outside, a handler whose jobs finish
 * only when the test says so, ways to let queued work run without sleeping, a bounded child node
 * process, and the seed programs' queues.
 */
import { spawn } from 'node:child_process';
import { afterEach, beforeEach, vi } from 'vitest';
import type { Job, RemoteAdapter } from '../src/index.js';

/** A promise with its resolve and reject exposed. */
export interface Deferred<T> {
  readonly promise: Promise<T>;
  resolve(value: T): void;
  reject(error: unknown): void;
}

export function deferred<T = void>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** Lets every queued microtask (and the ones they queue, up to `rounds` deep) run. */
export async function flushMicrotasks(rounds = 20): Promise<void> {
  for (let i = 0; i < rounds; i++) await Promise.resolve();
}

/** Resolves after one macrotask boundary on the real event loop (do not use under fake timers). */
export function nextMacrotask(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/** One started job of a {@link Gate}. */
export interface Started<T> {
  readonly job: Job<T>;
  /** Data of the job, for short assertions. */
  readonly data: T;
  /** Source name. */
  readonly source: string;
  finish(value?: unknown): void;
  fail(error: unknown): void;
  readonly done: boolean;
}

/**
 * A handler whose jobs run until the test finishes them. It counts jobs in flight, overall and
 * per source, and keeps the highest counts seen, so a test can check a ceiling was never passed.
 */
export class Gate<T = unknown> {
  /** Every job started, in start order. */
  readonly started: Started<T>[] = [];
  running = 0;
  maxRunning = 0;
  readonly runningBySource = new Map<string, number>();
  readonly maxBySource = new Map<string, number>();

  /** The handler to give the worker. */
  readonly handler = (job: Job<T>): Promise<unknown> => {
    const d = deferred<unknown>();
    const source = job.source;
    this.running++;
    this.maxRunning = Math.max(this.maxRunning, this.running);
    const mine = (this.runningBySource.get(source) ?? 0) + 1;
    this.runningBySource.set(source, mine);
    this.maxBySource.set(source, Math.max(this.maxBySource.get(source) ?? 0, mine));
    let done = false;
    const end = (): void => {
      if (done) throw new Error(`job ${job.id} finished twice by the test`);
      done = true;
      this.running--;
      this.runningBySource.set(source, (this.runningBySource.get(source) ?? 0) - 1);
    };
    this.started.push({
      job,
      data: job.data,
      source,
      finish: (value?: unknown) => {
        end();
        d.resolve(value);
      },
      fail: (error: unknown) => {
        end();
        d.reject(error);
      },
      get done() {
        return done;
      },
    });
    return d.promise;
  };

  /** Jobs started and not finished yet, in start order. */
  get open(): Started<T>[] {
    return this.started.filter((s) => !s.done);
  }

  /** Data of every job started so far, in start order. */
  get order(): T[] {
    return this.started.map((s) => s.data);
  }

  /** Finishes the oldest open job. */
  finishOldest(value?: unknown): Started<T> {
    const first = this.open[0];
    if (first === undefined) throw new Error('no open job to finish');
    first.finish(value);
    return first;
  }

  /** Finishes every open job. */
  finishAll(): void {
    for (const s of this.open) s.finish();
  }
}

/** What a child node process did (see {@link runNode}). */
export interface ChildRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  /** Whether it was killed for outliving its bound. */
  killed: boolean;
  stdout: string;
  stderr: string;
  ms: number;
}

/**
 * Runs `node ...args` and resolves when it ends; kills it if it has not ended by itself within
 * `boundMs` (generous: a loaded 2-core CI machine can be slow to start node).
 */
export function runNode(args: readonly string[], boundMs: number): Promise<ChildRun> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let killed = false;
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => {
      killed = true;
      child.kill('SIGKILL');
    }, boundMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, killed, stdout, stderr, ms: Date.now() - started });
    });
  });
}

/** The part of a worker the seed programs use (the src and dist Workers both fit). */
interface SeedWorker {
  bindQueue(options?: { priority?: number }): { add(data: string): unknown };
}

/**
 * Binds and fills the queues of the seed programs (varmq's Go strategy examples, the seed case of
 * README "Strategies"): alerts, reports, emails with 2, 1 and 3 jobs. `ranked` gives alerts priority 1 and reports 2 and fills the
 * lowest-ranked queue first, as the Priority program does; otherwise bind order ranks them.
 */
export function fillSeedQueues(worker: SeedWorker, ranked: boolean): void {
  const alerts = worker.bindQueue(ranked ? { priority: 1 } : undefined);
  const reports = worker.bindQueue(ranked ? { priority: 2 } : undefined);
  const emails = worker.bindQueue();
  if (ranked) {
    for (let i = 0; i < 3; i++) emails.add('email');
    reports.add('report');
    alerts.add('alert');
    alerts.add('alert');
  } else {
    alerts.add('alert');
    alerts.add('alert');
    reports.add('report');
    for (let i = 0; i < 3; i++) emails.add('email');
  }
}

/**
 * The orders the seed programs must give (SPEC 4), by strategy name, with whether the queues are
 * ranked (alerts 1, reports 2, emails none; the Priority program) or ranked by bind order alone.
 */
export const SEED_ORDERS: readonly { strategy: 'Priority' | 'RoundRobin' | 'MaxLen' | 'MinLen'; ranked: boolean; order: readonly string[] }[] = [
  { strategy: 'Priority', ranked: true, order: ['alert', 'alert', 'report', 'email', 'email', 'email'] },
  { strategy: 'RoundRobin', ranked: false, order: ['alert', 'report', 'email', 'alert', 'email', 'email'] },
  { strategy: 'MaxLen', ranked: false, order: ['email', 'alert', 'email', 'alert', 'report', 'email'] },
  { strategy: 'MinLen', ranked: false, order: ['report', 'alert', 'alert', 'email', 'email', 'email'] },
];

/**
 * Collects the process warnings emitted until `stop()`, and keeps Node from printing them: a
 * test that expects a warning (a QmuxWarning for a fault nobody listens to) takes the process's
 * own 'warning' listeners (Node's printer among them) off while it runs, so `npm test` shows no
 * warning that is in fact a pass. `stop()` puts them back.
 */
export function captureWarnings(): { warnings: (Error & { detail?: string })[]; stop(): void } {
  const warnings: (Error & { detail?: string })[] = [];
  const others = process.listeners('warning');
  const collect = (warning: Error): void => void warnings.push(warning);
  process.removeAllListeners('warning');
  process.on('warning', collect);
  return {
    warnings,
    stop() {
      process.off('warning', collect);
      for (const listener of others) process.on('warning', listener);
    },
  };
}

/**
 * Virtual time for every test of the file: timers, `Date` and `performance` (stats time jobs
 * with `performance.now()`) are faked from `now`; `queueMicrotask` is not, so promises settle as
 * usual. Call at the top level of a test file.
 */
export function useVirtualTime(now: number): void {
  beforeEach(() => {
    vi.useFakeTimers({
      now,
      toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'setImmediate', 'clearImmediate', 'Date', 'performance'],
    });
  });
  afterEach(() => {
    vi.useRealTimers();
  });
}

/** Resolves after `ms` of (virtual, with {@link useVirtualTime}) time. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A remote adapter with no jobs whose first `close()` waits until `releaseClose()` is called (a
 * stop then waits for the source to quiesce); later closes resolve at once.
 */
export function adapterWithHeldClose(): { adapter: RemoteAdapter<never>; releaseClose(): void } {
  let closes = 0;
  let release: () => void = () => {};
  const adapter: RemoteAdapter<never> = {
    lockDuration: 30_000,
    claim: (_max, signal) => new Promise((resolve) => signal.addEventListener('abort', () => resolve([]))),
    complete: async () => {},
    fail: async () => {},
    release: async () => {},
    extend: async () => {},
    close: () => (closes++ === 0 ? new Promise<void>((resolve) => (release = resolve)) : Promise.resolve()),
  };
  return { adapter, releaseClose: () => release() };
}
