import type { WorkerStatus } from '../api/worker-status.js';
import { InvalidStateError } from '../api/errors.js';

export type { WorkerStatus } from '../api/worker-status.js';

/** What the worker was last told to do; with the slots in use and the waiting jobs it gives the status. @internal */
export const enum Phase {
  Initiated,
  Started,
  Paused,
  Stopped,
  Halted,
}

/** The lifecycle calls of SPEC 2's table. @internal */
export type LifecycleCall = 'start' | 'pause' | 'resume' | 'stop';

/** The status that `phase` shows with `inFlight` slots in use and `waiting` jobs. @internal */
export function statusOf(phase: Phase, inFlight: number, waiting: number): WorkerStatus {
  switch (phase) {
    case Phase.Initiated:
      return 'initiated';
    case Phase.Started:
      return inFlight > 0 || waiting > 0 ? 'running' : 'idle';
    case Phase.Paused:
      return inFlight > 0 ? 'pausing' : 'paused';
    case Phase.Stopped:
      return inFlight > 0 ? 'stopping' : 'stopped';
    case Phase.Halted:
      return 'halted';
  }
}

/**
 * SPEC 2's table of which call is allowed in which state, as one function: the phase `call`
 * leads to from `phase`, `undefined` when the call is a no-op there, or an
 * {@link InvalidStateError} (thrown) when the state forbids it.
 *
 * | call | does its work from | no-op from |
 * |---|---|---|
 * | `start()` | initiated, stopped, halted | idle, running |
 * | `pause()` | idle, running | pausing, paused |
 * | `resume()` | pausing, paused | idle, running |
 * | `stop()` | every state but stopped | stopped |
 *
 * @internal
 */
export function nextPhase(call: LifecycleCall, phase: Phase, inFlight: number, waiting: number): Phase | undefined {
  const status = (): WorkerStatus => statusOf(phase, inFlight, waiting);
  switch (call) {
    case 'start':
      if (phase === Phase.Started) return undefined;
      if (phase === Phase.Paused) throw new InvalidStateError('start', status(), 'call resume() to undo pause()');
      if (phase === Phase.Stopped && inFlight > 0) throw new InvalidStateError('start', 'stopping', 'await stop() first');
      return Phase.Started;
    case 'pause':
      if (phase === Phase.Paused) return undefined;
      if (phase !== Phase.Started) {
        const hint =
          phase === Phase.Initiated
            ? 'call start() first'
            : phase === Phase.Stopped && inFlight > 0
              ? 'await stop(), then call start() to run again'
              : 'call start() to run again';
        throw new InvalidStateError('pause', status(), hint);
      }
      return Phase.Paused;
    case 'resume':
      if (phase === Phase.Started) return undefined;
      if (phase !== Phase.Paused) throw new InvalidStateError('resume', status(), 'resume() undoes pause(); use start()');
      return Phase.Started;
    case 'stop':
      return phase === Phase.Stopped ? undefined : Phase.Stopped;
  }
}
