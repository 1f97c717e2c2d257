import type { InvariantError } from '../api/errors.js';
import type { TrackedJob } from '../api/events.js';
import type { JobProgress, JobRecord } from '../handles/job.js';
import { listenerThrew, type WorkerEmitter } from './faults.js';

// One emitter per signature, each checked against WorkerEvents: no rest array per event on the
// hot path, and a listener that throws cannot corrupt the worker's state (it is reported).

/** A job record as the events' listeners see it. */
function tracked<T, R>(job: JobRecord): TrackedJob<T, R> {
  return job as unknown as TrackedJob<T, R>;
}

/** eventemitter3's count of events listened to: 0 while nobody listens to anything. */
interface ListenerCount {
  readonly _eventsCount: number;
}

/**
 * Whether nobody listens to any event of `worker`: then the two emits of every job (`active`,
 * `completed`) are skipped without a call. A field read, where an unheard emit still looks the
 * event up; with any listener at all, emit decides as usual.
 */
function unheard<T, R>(worker: WorkerEmitter<T, R>): boolean {
  return (worker as unknown as ListenerCount)._eventsCount === 0;
}

/** Emits `active` or `cancelled`. @internal */
export function emitJob<T, R>(worker: WorkerEmitter<T, R>, event: 'active' | 'cancelled', job: JobRecord): void {
  if (unheard(worker)) return;
  try {
    worker.emit(event, tracked<T, R>(job));
  } catch (error) {
    listenerThrew(worker, event, error);
  }
}

/** Emits `completed`. @internal */
export function emitCompleted<T, R>(worker: WorkerEmitter<T, R>, job: JobRecord, result: R): void {
  if (unheard(worker)) return;
  try {
    worker.emit('completed', tracked<T, R>(job), result);
  } catch (error) {
    listenerThrew(worker, 'completed', error);
  }
}

/** Emits `failed` or `dead`. @internal */
export function emitFailure<T, R>(worker: WorkerEmitter<T, R>, event: 'failed' | 'dead', job: JobRecord, error: unknown): void {
  try {
    worker.emit(event, tracked<T, R>(job), error);
  } catch (listenerError) {
    listenerThrew(worker, event, listenerError);
  }
}

/** Emits `retrying`. @internal */
export function emitRetrying<T, R>(worker: WorkerEmitter<T, R>, job: JobRecord, error: unknown, delayMs: number | undefined): void {
  try {
    worker.emit('retrying', tracked<T, R>(job), error, delayMs);
  } catch (listenerError) {
    listenerThrew(worker, 'retrying', listenerError);
  }
}

/** Emits `progress`. @internal */
export function emitProgress<T, R>(worker: WorkerEmitter<T, R>, job: JobRecord, value: JobProgress): void {
  try {
    worker.emit('progress', tracked<T, R>(job), value);
  } catch (listenerError) {
    listenerThrew(worker, 'progress', listenerError);
  }
}

/** Emits `idle`, `paused`, `resumed` or `stopped`. @internal */
export function emitState<T, R>(worker: WorkerEmitter<T, R>, event: 'idle' | 'paused' | 'resumed' | 'stopped'): void {
  try {
    worker.emit(event);
  } catch (error) {
    listenerThrew(worker, event, error);
  }
}

/** Emits `halted`. @internal */
export function emitHalted<T, R>(worker: WorkerEmitter<T, R>, error: InvariantError): void {
  try {
    worker.emit('halted', error);
  } catch (listenerError) {
    listenerThrew(worker, 'halted', listenerError);
  }
}

/** Emits `degraded`. @internal */
export function emitDegraded<T, R>(worker: WorkerEmitter<T, R>, error: unknown): void {
  try {
    worker.emit('degraded', error);
  } catch (listenerError) {
    listenerThrew(worker, 'degraded', listenerError);
  }
}
