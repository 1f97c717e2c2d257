import type { Core } from '../core/core.js';
import { Phase, type WorkerStatus } from '../core/worker-state.js';
import { hostWarning, onBeforeExit } from './host.js';

/**
 * No silent exit (SPEC 2). A worker that may not start jobs holds nothing that keeps the process
 * alive, so a script that adds jobs to one and awaits them would end with Node's exit code 13
 * and no word. When the process is about to exit (`beforeExit`), every worker with waiting jobs
 * it may not start gets one `QmuxWarning` per status it is found in.
 *
 * One `beforeExit` listener serves every worker in the process: it is added with the first
 * worker, and it reaches the workers through weak references, so a worker nobody references
 * any more is collected as before (and leaves the set once it is).
 *
 * @internal
 */

/** The part of a worker the listener reads: its name and core, and what it was warned about. */
export class ExitWatch {
  name = '';
  core: Core | undefined = undefined;
  /** Statuses already warned about (at most once per worker and status). */
  readonly warned: WorkerStatus[] = [];
}

const watched = new Set<WeakRef<ExitWatch>>();
const collected = new FinalizationRegistry<WeakRef<ExitWatch>>((ref) => watched.delete(ref));
let listening = false;

/** Watches a worker's `watch` (which the worker holds, and nothing else strongly) from now on. */
export function watchExit(watch: ExitWatch, name: string, core: Core): void {
  watch.name = name;
  watch.core = core;
  const ref = new WeakRef(watch);
  watched.add(ref);
  collected.register(watch, ref);
  if (!listening) {
    listening = true;
    onBeforeExit(warnAboutStrandedJobs);
  }
}

/**
 * Whether a live worker of this process is named `name` (the watched workers are every live
 * worker: the set doubles as the one process-wide list of them). O(workers), at construction.
 */
export function workerNameInUse(name: string): boolean {
  for (const ref of watched) if (ref.deref()?.name === name) return true;
  return false;
}

/**
 * How many of `core`'s waiting jobs (due or delayed) it may not start; 0 when it may start them,
 * when nothing waits, and when the user stopped it.
 */
export function strandedJobs(core: Core): number {
  if (core.queued === 0) return 0;
  // A stop the user asked for (stop(), a registry's shutdown) leaves its waiting jobs on purpose:
  // nothing is stranded by surprise, whether its running handlers have settled or not.
  if (core.phase === Phase.Stopped) return 0;
  if (core.phase !== Phase.Started) return core.queued;
  // Keys (SPEC 10): a started worker strands its waiting jobs too when every one of them sits in
  // a paused key (the warning then says to resume them, see `hint`). O(active keys), at exit only.
  let stranded = 0;
  for (const source of core.list) {
    const waiting = source.length;
    if (waiting === 0) continue;
    if (source.keys === undefined || source.keys.waitingInPausedKeys() !== waiting) return 0;
    stranded += waiting;
  }
  return stranded;
}

/** Paused keys named in a warning, at most, per source. */
const KEYS_NAMED = 3;

/**
 * The paused keys that hold waiting jobs, as `queue "q": key "a", key "b"`, one part per keyed
 * source; empty when there are none.
 */
function pausedKeys(core: Core): string {
  const parts: string[] = [];
  for (const source of core.list) {
    if (source.keys === undefined || source.length === 0) continue;
    const names = source.keys.pausedKeysWithWork(KEYS_NAMED + 1);
    if (names.length === 0) continue;
    const shown = names.slice(0, KEYS_NAMED).map((name) => JSON.stringify(name));
    parts.push(`"${source.name}": ${shown.join(', ')}${names.length > KEYS_NAMED ? ' and more' : ''}`);
  }
  return parts.join('; ');
}

/** What to call so that the stranded jobs run. */
function hint(status: WorkerStatus, core: Core): string {
  const keys = pausedKeys(core);
  const resumeKeys = keys === '' ? '' : `resumeKey(key) on their queues for the paused keys (${keys})`;
  switch (status) {
    case 'initiated':
      return `call start()${resumeKeys === '' ? '' : ` and ${resumeKeys}`} to run them`;
    case 'paused':
    case 'pausing':
      return `call resume()${resumeKeys === '' ? '' : ` and ${resumeKeys}`} to run them`;
    case 'halted':
      return 'fix the broken invariant (see health()) and call start() to run them';
    default:
      // Started: every waiting job sits in a paused key (see `strandedJobs`).
      return `call ${resumeKeys} to run them`;
  }
}

/** The `beforeExit` listener: one warning per worker with stranded jobs, once per status. */
export function warnAboutStrandedJobs(): void {
  for (const ref of watched) {
    const watch = ref.deref();
    if (watch === undefined) {
      watched.delete(ref);
      continue;
    }
    const core = watch.core;
    if (core === undefined) continue;
    const stranded = strandedJobs(core);
    if (stranded === 0) continue;
    const status = core.status;
    if (watch.warned.includes(status)) continue;
    watch.warned.push(status);
    const jobs = stranded === 1 ? '1 waiting job' : `${stranded} waiting jobs`;
    hostWarning(
      `worker "${watch.name}" is ${status} with ${jobs} that it may not start, and the process is about to exit without running them; ` +
        `${hint(status, core)} (or purge() their sources to drop them)`,
      { type: 'QmuxWarning', code: 'QMUX_STRANDED_JOBS' },
    );
  }
}
