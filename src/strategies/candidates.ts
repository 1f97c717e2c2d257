import type { EligibleSet } from '../core/eligible-set.js';
import type { Lane } from '../core/lane.js';
import { bindOrderOf } from './bind-order.js';
import type { SourceView } from '../api/strategy.js';

/**
 * What a built-in strategy reads of the list: positions 0 to `size - 1` in list order, which of
 * them are eligible, and each one's numbers. Each built-in strategy is written once over this;
 * its public `pick(list)` runs it over the views ({@link ViewCandidates}) and its fast path over
 * the dispatcher's eligible set and sources ({@link SetCandidates}), so the two pick alike.
 *
 * @internal
 */
export interface Candidates {
  /** Positions in the list. */
  readonly size: number;
  /** The lowest eligible position, or -1. */
  first(): number;
  /** The lowest eligible position at or after `at`, or -1. */
  nextFrom(at: number): number;
  /** Due jobs waiting at `at` (as `SourceView.length`). */
  length(at: number): number;
  /** The priority number at `at`, `Infinity` when unranked (it goes after every ranked one). */
  rank(at: number): number;
  /** The bind order at `at` (see `bindOrderOf`). */
  order(at: number): number;
}

/**
 * The public list of views as {@link Candidates}: eligibility asked of each view in turn. One is
 * reused per picker (or per stateless strategy), holding its list only during a pick.
 *
 * @internal
 */
export class ViewCandidates implements Candidates {
  list: readonly SourceView[] = [];

  get size(): number {
    return this.list.length;
  }

  first(): number {
    return this.nextFrom(0);
  }

  nextFrom(at: number): number {
    const list = this.list;
    for (let i = at; i < list.length; i++) if ((list[i] as SourceView).eligible) return i;
    return -1;
  }

  length(at: number): number {
    return (this.list[at] as SourceView).length;
  }

  rank(at: number): number {
    return (this.list[at] as SourceView).priority ?? Infinity;
  }

  order(at: number): number {
    return bindOrderOf(this.list[at] as SourceView);
  }
}

/**
 * The dispatcher's eligible set and bound sources as {@link Candidates}: the eligible positions
 * come from the set's word scans, without asking each source; a length is read as its view would.
 *
 * @internal
 */
export class SetCandidates implements Candidates {
  eligible: EligibleSet | undefined = undefined;
  list: readonly Lane[] = [];

  get size(): number {
    return this.list.length;
  }

  first(): number {
    return (this.eligible as EligibleSet).first();
  }

  nextFrom(at: number): number {
    return (this.eligible as EligibleSet).nextFrom(at);
  }

  length(at: number): number {
    return (this.list[at] as Lane).dueLength;
  }

  rank(at: number): number {
    return (this.list[at] as Lane).priority ?? Infinity;
  }

  order(at: number): number {
    return (this.list[at] as Lane).bindOrder;
  }
}

/** An empty list, to let go of the one a {@link ViewCandidates} or {@link SetCandidates} held. */
export const NO_VIEWS: readonly SourceView[] = Object.freeze([]);
/** An empty list of sources (see {@link NO_VIEWS}). */
export const NO_LANES: readonly Lane[] = Object.freeze([]);
