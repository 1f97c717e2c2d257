/**
 * Compile-time checks of the public types: `npm test` type-checks this file (tsc over test/), so
 * each `@ts-expect-error` line must fail to compile, and every other line must compile. The
 * runtime part only makes sure the file is loaded and the values behave as their types say.
 */
import { describe, expect, it } from 'vitest';
import {
  type InvariantError,
  QueueFullError,
  Registry,
  Topic,
  Worker,
  type AddOptions,
  type Job,
  type JobHandle,
  type Queue,
  type RemoteAdapter,
  type RemoteSource,
  type WorkerHealth,
  type WorkerStatus,
} from '../src/index.js';

/** Compiles only when `A` and `B` are the same type. */
type Equal<A, B> = (<V>() => V extends A ? 1 : 2) extends <V>() => V extends B ? 1 : 2 ? true : false;
const assertType = <T extends true>(): T | undefined => undefined;

function typeChecks(): void {
  const strings = new Worker(async (job: Job<string>) => job.data.length, { autoRun: false });
  const q = strings.bindQueue();

  // Job data is checked on the way in, and a source's data type cannot be widened behind its back.
  // @ts-expect-error a number is not a string
  q.add(5);
  // @ts-expect-error Queue<string> is not a Queue<string | number>: add(5) would reach the handler
  const widened: Queue<string | number, number> = q;
  void widened;

  // A worker whose data type includes the topic's may subscribe; a narrower one may not.
  const wide = new Worker(async (job: Job<string | number>) => String(job.data), { autoRun: false });
  wide.subscribe(new Topic<string>());
  // @ts-expect-error the topic would hand this worker numbers
  strings.subscribe(new Topic<string | number>());

  // Subscribers' results may differ, so a publish gives handles of unknown results, read-only.
  const handles = new Topic<string>().publish('x');
  assertType<Equal<typeof handles, readonly JobHandle<unknown>[]>>();
  // @ts-expect-error the array of handles is read-only
  handles.length = 0;

  // delay and runAt are exclusive.
  const later: AddOptions = { delay: 5 };
  const at: AddOptions = { runAt: new Date(), id: 'x' };
  // @ts-expect-error both at once
  const both: AddOptions = { delay: 5, runAt: Date.now() };
  void later;
  void at;
  void both;

  // A worker from the registry is typed to be managed, not fed: its job types are unknown here.
  const registry = new Registry().add(strings).add(wide);
  const found = registry.get('strings');
  found?.pause();
  // @ts-expect-error its data type is not known
  found?.bindQueue().add('x');
  // A generic helper takes it, and typed workers, alike; a cast through unknown restores the types.
  const summary = <T, R>(worker: Worker<T, R>): string => `${worker.name}: ${worker.status}`;
  summary(found!);
  summary(strings);
  new Registry().add(found!);
  (found as unknown as Worker<string, number>).bindQueue().add('x');

  // A remote adapter must have the whole interface, and carry the worker's data and result types.
  const strAdapter = {} as RemoteAdapter<string, number>;
  const remote: RemoteSource<string, number> = strings.bindRemote(strAdapter, { prefetch: 4, weight: 3 });
  void remote;
  // @ts-expect-error the adapter would hand this worker numbers
  strings.bindRemote({} as RemoteAdapter<number, number>);
  // @ts-expect-error an adapter without release() and extend()
  strings.bindRemote({ lockDuration: 1, claim: strAdapter.claim, complete: strAdapter.complete, fail: strAdapter.fail, close: strAdapter.close });
  // @ts-expect-error prefetch is a number
  strings.bindRemote(strAdapter, { prefetch: '4' });

  // health() narrows on status.
  const health: WorkerHealth = strings.health();
  if (health.status === 'halted') assertType<Equal<typeof health.error, InvariantError>>();
  if (health.status === 'degraded') assertType<Equal<typeof health.reason, string>>();
  if (health.status === 'healthy') assertType<Equal<typeof health.error, undefined>>();
  assertType<Equal<ReturnType<typeof strings.stats>['status'], WorkerStatus>>();
}

describe('public types', () => {
  it('hold at run time what the compile-time checks above assume', () => {
    expect(typeChecks).toBeTypeOf('function');
    const full = new QueueFullError('emails', 3); // error constructors are public
    expect([full.source, full.capacity, full.name]).toEqual(['emails', 3, 'QueueFullError']);
    const worker = new Worker(async (job: Job<string>) => job.data, { autoRun: false });
    const health = worker.health();
    expect(health).toEqual({ status: 'healthy', workerStatus: 'initiated' });
    expect(() => worker.bindQueue().add('x', { delay: 5, runAt: Date.now() } as unknown as AddOptions)).toThrow(TypeError);
  });
});
