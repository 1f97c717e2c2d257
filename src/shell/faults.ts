import type { EventEmitter } from 'eventemitter3';
import type { WorkerEvents } from '../api/events.js';
import { isError, messageOf, safeString } from '../api/describe.js';
import { hostWarning } from './host.js';

/** What reporting a fault needs of a worker. @internal */
export interface FaultSink {
  readonly name: string;
  listenerCount(event: 'error'): number;
  emit(event: 'error', error: unknown): boolean;
}

/**
 * A fault that is neither a job's failure nor a broken invariant (a listener or a retry hook
 * that threw, a pool error): emitted on `error` when someone listens there, else a process
 * warning. Never dropped, and never an uncaught exception: qmux is a guest in the host process.
 *
 * @internal
 */
export function reportFault(worker: FaultSink, error: unknown, what: string): void {
  if (worker.listenerCount('error') === 0) {
    warn(worker, error, what);
    return;
  }
  try {
    worker.emit('error', error);
  } catch (listenerError) {
    warn(worker, listenerError, 'a listener of the "error" event threw');
  }
}

/** A listener of `event` threw: the worker carries on, and the error is reported. @internal */
export function listenerThrew(worker: FaultSink, event: string, error: unknown): void {
  if (event === 'error') warn(worker, error, 'a listener of the "error" event threw');
  else reportFault(worker, error, `a listener of the "${event}" event threw`);
}

function warn(worker: FaultSink, error: unknown, what: string): void {
  // A message, not the Error itself: given an Error, Node ignores `type` and `detail`.
  let message = safeString(error);
  let stack = '';
  if (isError(error)) {
    try {
      message = `${safeString(error.name)}: ${messageOf(error)}`;
      if (error.stack !== undefined) stack = `\n${safeString(error.stack)}`;
    } catch {
      // a getter that throws: the message above stands
    }
  }
  hostWarning(message, {
    type: 'QmuxWarning',
    detail: `worker "${worker.name}": ${what}; listen to its "error" event to handle this.${stack}`,
  });
}

/** A worker is a fault sink. @internal */
export type WorkerEmitter<T, R> = EventEmitter<WorkerEvents<T, R>> & FaultSink;
