import { laneOfView } from '../core/lane.js';
import type { SourceView } from '../api/strategy.js';

/**
 * A view's bind order: unique within its worker and never reused, so a picker can remember a
 * source by it without holding the view (which would keep a subscription that has left the list
 * alive, with everything it holds). Also the tie-break of list order among equal priorities.
 *
 * @internal
 */
export function bindOrderOf(view: SourceView): number {
  return laneOfView(view)?.bindOrder ?? 0;
}
