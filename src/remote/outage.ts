import { LostLocksError, RemoteSourceError } from './errors.js';

/**
 * How long a call about claimed jobs (an outcome, a release, a renewal) may go unanswered before
 * the engine counts as out of reach (SPEC 9: "gets no answer within a few seconds"): a server that
 * stops answering over a live connection fails no call. A claim is not timed: it may wait for work.
 *
 * @internal
 */
export const ANSWER_WITHIN_MS = 5000;

/** The first wait before retrying a call that could not reach the engine, ms; it doubles up to {@link MAX_BACKOFF_MS}. */
const FIRST_BACKOFF_MS = 100;
/** Longest wait between retries: short enough that a source is back well within 10 s of its engine. */
export const MAX_BACKOFF_MS = 2_000;

/**
 * Whether a remote source can reach its engine, and what to report about it (SPEC 9): one
 * fault per outage (not per call or job), the claims lost during it counted and reported once
 * when it ends, and the backoff before the next try.
 *
 * @internal
 */
export class Outage {
  readonly #source: string;
  readonly #report: (error: unknown) => void;
  /** The error that began the outage in progress, or `undefined` while the engine answers. */
  error: RemoteSourceError | undefined = undefined;
  /** Claims lost since the outage began. */
  #lostDuring = 0;
  /** Claims lost since the source was bound. */
  lostLocks = 0;
  #failures = 0;

  /**
   * @param source - the source's name
   * @param report - reports a fault (the worker's `error` event or a warning)
   */
  constructor(source: string, report: (error: unknown) => void) {
    this.#source = source;
    this.#report = report;
  }

  get down(): boolean {
    return this.error !== undefined;
  }

  /** A call failed, or the adapter said the engine is unreachable. True when this began an outage. */
  fault(what: string, cause: unknown): boolean {
    this.#failures++;
    if (this.error !== undefined) return false;
    this.error = new RemoteSourceError(this.#source, what, cause);
    this.#report(this.error);
    return true;
  }

  /** The engine answered: the outage, if any, is over. True when this ended one. */
  answered(): boolean {
    this.#failures = 0;
    if (this.error === undefined) return false;
    this.error = undefined;
    const lost = this.#lostDuring;
    this.#lostDuring = 0;
    if (lost > 0) this.#report(new LostLocksError(this.#source, lost));
    return true;
  }

  /** `count` claims were lost (at one renewal, say): reported when the outage ends, or now, in one report, when there is none. */
  lost(count = 1): void {
    this.lostLocks += count;
    if (this.error !== undefined) this.#lostDuring += count;
    else this.#report(new LostLocksError(this.#source, count));
  }

  /** How long to wait before the next try, given the failures since the engine last answered. */
  backoffMs(): number {
    return Math.min(MAX_BACKOFF_MS, FIRST_BACKOFF_MS * 2 ** Math.max(0, this.#failures - 1));
  }
}
