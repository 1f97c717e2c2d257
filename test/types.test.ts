/**
 * Compile-time checks of the public types: `npm test` type-checks this file (tsc over test/), so
 * each `@ts-expect-error` line must fail to compile, and every other line must compile. The
 * runtime part only makes sure the file is loaded and the values behave as their types say.
 */
import { describe, expect, it } from 'vitest';
import {
  createAdminHandler,
  type InvariantError,
  QueueFullError,
  Registry,
  Topic,
  Worker,
  type AddOptions,
  type Job,
  type JobHandle,
  type JobProgress,
  Queue as QueueClass,
  type Queue,
  type Task,
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

  // Keys (SPEC 10): keys.by reads the queue's data type, keys is not a subscribe option, a key is a string or a number.
  const keyed = strings.bindQueue({ keys: { by: (data) => data.length, weight: (key: string) => key.length } });
  keyed.add('a', { key: 'tenant' });
  keyed.add('a', { key: 7 });
  assertType<Equal<ReturnType<typeof keyed.add>['key'], string | undefined>>(); // the handle carries its key
  // @ts-expect-error a key is a string or a number
  keyed.add('a', { key: { tenant: 1 } });
  // @ts-expect-error keys.by gets the job data, a string here
  strings.bindQueue({ keys: { by: (data: number) => data } });
  // @ts-expect-error keys is for queues and priority queues, not subscriptions
  strings.subscribe(new Topic<string>(), { keys: {} });
  // A queue bound without keys has neither key methods nor the key option (they throw); one bound
  // with keys has both, and so does a queue typed without saying (Queue<T, R>).
  // @ts-expect-error no keys: no key option
  q.add('a', { key: 'tenant' });
  // @ts-expect-error no keys: no pauseKey
  q.pauseKey('tenant');
  // @ts-expect-error no keys: no keyStats
  q.keyStats('tenant');
  // @ts-expect-error no keys: purge takes no key
  q.purge({ key: 'tenant' });
  // @ts-expect-error no keys: nor does a priority queue's add
  strings.bindPriorityQueue().add('a', 1, { key: 'tenant' });
  q.purge();
  keyed.pauseKey('tenant');
  keyed.purge({ key: 'tenant' });
  strings.bindPriorityQueue({ keys: {} }).resumeKey(3);
  assertType<Equal<typeof keyed.keyed, true>>();
  assertType<Equal<typeof q.keyed, false>>();
  // An AddOptions built elsewhere still goes to a queue without keys (only a literal key is caught).
  const built: AddOptions = { delay: 5 };
  q.add('a', built);
  q.purge({});
  // A queue narrowed by instanceof has K = any: say what it is to call its key methods.
  const someSource: unknown = keyed;
  if (someSource instanceof QueueClass) (someSource as Queue<string, number>).pauseKey('tenant');
  const unknownKeys: Queue<string, number> = Math.random() > 0.5 ? keyed : q;
  unknownKeys.keyStats('tenant'); // may throw: the type does not know
  void unknownKeys.add('a', { key: 'tenant' });

  // null counts as not given (SPEC 10): a key read from a nullable column needs no `?? undefined`.
  const fromDb: string | null = null as string | null;
  keyed.add('a', { key: fromDb });
  // @ts-expect-error a topic delivers to every subscription: a key belongs to one keyed queue
  new Topic<string>().publish('x', { key: 'tenant' });
  // @ts-expect-error one id cannot name a batch
  q.addAll(['a', 'b'], { id: 'batch' });
  q.addAll(['a', 'b'], { delay: 5 });
  assertType<Equal<ReturnType<typeof keyed.keyStats>['paused'], boolean>>();
  assertType<Equal<Job<string>['key'], string | undefined>>();

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

  // Handles and groups are thenables: awaiting one gives the handler's result(s) (issue 33).
  assertType<Equal<Awaited<ReturnType<typeof q.add>>, number>>();
  assertType<Equal<Awaited<ReturnType<typeof q.addAll>>, number[]>>();
  const awaitable: PromiseLike<number> = q.add('a');
  void awaitable;

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

  // The admin handler's options, and what metrics() returns.
  createAdminHandler(registry, { readOnly: true });
  // @ts-expect-error readOnly is a boolean
  createAdminHandler(registry, { readOnly: 'yes' });
  // @ts-expect-error a misspelt option
  createAdminHandler(registry, { readonly: true });
  createAdminHandler(registry, { allowedHosts: ['admin.example', '.corp.example'] });
  createAdminHandler(registry, { allowedHosts: true });
  // @ts-expect-error allowedHosts is names or true, not false
  createAdminHandler(registry, { allowedHosts: false });
  assertType<Equal<ReturnType<typeof registry.metrics>, string>>();
  assertType<Equal<ReturnType<typeof strings.stats>['sources'][string]['counters'], ReturnType<typeof strings.stats>['counters']>>();
  // Listeners are typed by the event: the job's data and result types reach them.
  strings.on('completed', (job, result) => {
    assertType<Equal<typeof job.data, string>>();
    assertType<Equal<typeof result, number>>();
  });
  // undefined for a remote job whose engine will retry it (SPEC 9)
  strings.once('retrying', (_job, _error, delayMs) => assertType<Equal<typeof delayMs, number | undefined>>());
  // @ts-expect-error this worker's results are numbers
  strings.on('completed', (_job, _result: string) => {});
  // @ts-expect-error no such event
  strings.on('finished', () => {});
  // @ts-expect-error 'idle' has no arguments
  strings.off('idle', (_job: unknown) => {});
  // A function worker's data type is the task, its result type the task's.
  const numbers = new Worker<number>({ autoRun: false });
  assertType<Equal<typeof numbers, Worker<Task<number>, number>>>();
  // Progress: a report is a value, never undefined; the handle and the event carry it.
  new Worker(async (job: Job<string>) => {
    job.updateProgress(50);
    job.updateProgress({ done: 1, total: 2 });
    // @ts-expect-error undefined is not a report
    job.updateProgress(undefined);
  });
  assertType<Equal<JobHandle<number>['progress'], JobProgress | undefined>>();
  strings.on('progress', (job, value) => {
    assertType<Equal<typeof value, JobProgress>>();
    assertType<Equal<typeof job.data, string>>();
  });

  // A function worker calls each job's function with its Job; one without a parameter works too.
  const limit = new Worker<string>({ autoRun: false });
  const tasks = limit.bindQueue();
  tasks.add((job) => {
    job.updateProgress(1);
    return job.signal.aborted ? 'aborted' : job.id;
  });
  tasks.add(() => 'no parameter');
  // @ts-expect-error the function's result must be the worker's result type
  tasks.add((job) => job.attempt);
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
