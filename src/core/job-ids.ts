import type { CoreJob } from './job-record.js';
import type { Lane } from './lane.js';

/**
 * Job ids (SPEC 5): a user-given id is unique within its source while the job is in use, from
 * its add until it has settled and no attempt of it runs (a cancelled or timed-out job whose
 * handler still runs keeps its id until the handler returns). Only user ids are looked up: a job
 * without one never touches the map, and a source whose jobs never had one has no map at all.
 * Generated ids are decimal integers, a form `checkJobId` refuses for user ids, so the two never
 * collide.
 *
 * The core claims an id as the job joins its source (or is parked behind its predecessor) and
 * releases it in the transitions that leave the job settled with no attempt running.
 *
 * @internal
 */

/** The job that holds user id `id` in `source`, if it is in use there. */
export function jobWithId(source: Lane, id: string): CoreJob | undefined {
  return source.ids?.get(id);
}

/** `job` (whose user id is `id`) now holds it in its source; a redrive parked behind its predecessor takes it over. */
export function claimId(job: CoreJob, id: string): void {
  (job.home.ids ??= new Map()).set(id, job);
}

/** `job` has settled and no attempt of it runs: its id, if it holds one, is free again. */
export function releaseId(job: CoreJob): void {
  const id = job.ext?.id;
  if (id === undefined) return;
  const ids = job.home.ids;
  if (ids !== undefined && ids.get(id) === job) ids.delete(id);
}
