/**
 * qmux: an in-memory multi-queue job dispatcher. One {@link Worker} binds several sources
 * (queues, priority queues, topic subscriptions); a {@link Strategy} picks which gives the next job.
 *
 * @packageDocumentation
 * @module qmux
 */
export {
  Worker,
  type WorkerOptions,
  type ThreadWorkerOptions,
  type WorkerStatus,
  type WorkerHealth,
  type HealthyWorker,
  type DegradedWorker,
  type HaltedWorker,
  type Handler,
  type Task,
} from './shell/worker.js';
export { ThreadExitError, ThreadStartError, ThreadTaskError } from './pool/thread-errors.js';
export type { ThreadPoolOptions } from './pool/thread-options.js';
export type { ThreadContext } from './pool/thread-entry.js';
export type { ThreadTransferable } from './api/transferable.js';
export { createAdminHandler, type AdminHandler, type AdminOptions } from './ops/admin.js';
export { Registry, type RegistryHealth, type RegistryStats, type ShutdownOptions, type ShutdownResult } from './ops/registry.js';
export type { WorkerStats, WorkerCounters, SourceStats, TimingStats } from './api/stats.js';
export type { DeadLetter } from './api/dead-letter.js';
export type { RetryOptions, Backoff, BackoffSchedule } from './api/retry.js';
export { Queue } from './sources/queue.js';
export { PriorityQueue, type PriorityItem } from './sources/priority-queue.js';
export { Topic, Subscription } from './sources/topic.js';
export { Source, type QueueBindOptions } from './sources/source.js';
export type { BindOptions, PurgeOptions, RateLimit } from './api/bind-options.js';
export type { KeyArgument, KeyedOnly, KeysOptions, KeyStats } from './sources/keys.js';
export type {
  AddAllOptions,
  AddOptions,
  DelayOption,
  DelayOrRunAt,
  JobOptions,
  KnownWithoutKeys,
  PublishOptions,
  QueueAddAllOptions,
  QueueAddOptions,
  RunAtOption,
} from './sources/add-options.js';
export { Strategy, setDefaultStrategy, type BuiltInStrategies, type Picker, type SourceView } from './strategies/index.js';
export type { Job, JobHandle, JobGroup, JobProgress, JobStatus } from './handles/job.js';
export type { WorkerEvents, TrackedJob } from './api/events.js';
export {
  QmuxError,
  QueueFullError,
  QueueClosedError,
  CancelledError,
  InvalidStateError,
  InvariantError,
  JobIdInUseError,
  TimeoutError,
} from './api/errors.js';
export { RemoteSource } from './remote/remote-source.js';
export type { RemoteAdapter, RemoteJob, RemoteBindOptions } from './remote/adapter.js';
export { LockLostError, LostLocksError, RemoteSourceError } from './remote/errors.js';
