import { JobRecord } from '../handles/job.js';
import { State, UNTIMED } from '../core/job-record.js';
import type { Source } from '../sources/source.js';
import type { RemoteJob } from './adapter.js';

/**
 * A job claimed from a remote engine: a local job record (so strategies, caps, events, timeouts
 * and cancellation treat it like any other) that carries the engine's job, whose id and
 * attempt the handler sees.
 *
 * @internal
 */
export class RemoteJobRecord<T = unknown, R = unknown> extends JobRecord<T, R> {
  /** The engine's job, given back to the adapter for every call about it. */
  readonly remote: RemoteJob<T>;
  /** Set once the engine said the claim is gone (counted once). */
  lockLost = false;
  /**
   * When the engine last confirmed its lock, on the worker's clock: when the claim that got it
   * was sent, then when each renewal that kept it was sent. A claim not confirmed for
   * `lockDuration` has lapsed, whatever the engine says later (see `RemoteSource`).
   */
  confirmedAt = 0;
  /** When its handler settled and the source began recording its outcome, on the worker's clock. */
  outcomeSince = 0;

  constructor(home: Source<T, R>, remote: RemoteJob<T>) {
    super(home, remote.data, UNTIMED, State.Due);
    this.remote = remote;
  }

  override get id(): string {
    return this.remote.id;
  }

  override get attempt(): number {
    return this.remote.attempt;
  }

  /**
   * Set while a call that records its outcome or hands it back is in flight: its claim is not
   * renewed then, and the engine saying it is gone is that call's answer to give.
   */
  recording = false;

  /**
   * Whether the engine runs the job again after the attempt that is failing: asked of the adapter
   * by the shell before the transition (`RemoteSource.judge`), read by the core.
   */
  engineRetries = false;
}
