/**
 * qmux: an in-memory multi-queue job dispatcher. One {@link Worker} binds several sources
 * (queues, priority queues, topic subscriptions); a {@link Strategy} picks which gives the next job.
 *
 * @packageDocumentation
 */
export { Worker, type WorkerConstructor, type WorkerOptions, type WorkerStatus, type Handler, type Task } from './worker.js';
export { Queue } from './queue.js';
export { PriorityQueue, type PriorityItem } from './priority-queue.js';
export { Topic, Subscription } from './topic.js';
export { Source, type AddOptions, type BindOptions, type RateLimit } from './source.js';
export { Strategy, setDefaultStrategy, type Picker, type SourceView } from './strategies/index.js';
export type { Job, JobHandle, JobGroup, JobStatus } from './job.js';
export type { WorkerEvents, TrackedJob } from './events.js';
export {
  QmuxError,
  QueueFullError,
  QueueClosedError,
  CancelledError,
  InvalidStateError,
  InvariantError,
} from './errors.js';
