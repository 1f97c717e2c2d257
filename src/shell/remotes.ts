import type { RemoteSource } from '../remote/remote-source.js';
import { captureContext, type ContextScope } from './async-context.js';

/**
 * The remote sources bound to one worker (SPEC 9), with the async context each was bound in
 * (SPEC 13: its jobs run in it): what the drive asks of them all at once. Nothing is made
 * until the first one is bound, so a worker without one pays one check per settle.
 *
 * @internal
 */
export class Remotes<T, R> {
  #list: RemoteSource<T, R>[] | undefined = undefined;
  #scopes: Map<RemoteSource<T, R>, ContextScope | undefined> | undefined = undefined;

  /** Adds a newly bound source, in the current context if jobs carry theirs. */
  add(source: RemoteSource<T, R>, carriesContext: boolean): void {
    (this.#list ??= []).push(source);
    (this.#scopes ??= new Map()).set(source, carriesContext ? captureContext() : undefined);
  }

  /** A source closed: it leaves. */
  remove(source: RemoteSource<T, R>): void {
    const list = this.#list;
    if (list === undefined) return;
    const at = list.indexOf(source);
    if (at >= 0) list.splice(at, 1);
    this.#scopes?.delete(source);
  }

  /** The context `source` was bound in, if jobs carry theirs. */
  scopeOf(source: RemoteSource<T, R>): ContextScope | undefined {
    return this.#scopes?.get(source);
  }

  /** The first source whose engine is out of reach, if any (health). */
  down(): RemoteSource<T, R> | undefined {
    return this.#list?.find((source) => source.outage.down);
  }

  /** Whether a remote source is still recording an outcome: the worker is not idle until it has (SPEC 9). */
  recordingOutcomes(): boolean {
    const list = this.#list;
    if (list === undefined) return false;
    for (const source of list) if (source.recordingOutcomes) return true;
    return false;
  }

  /** Lets every remote source claim or hand back as the worker's state now asks. */
  sync(): void {
    const list = this.#list;
    if (list === undefined) return;
    // In the context each was bound in: a claim started here may wait long after the job whose
    // finish called this has settled, and must neither keep that job's context alive nor carry it.
    for (const source of list) {
      const scope = this.#scopes?.get(source);
      if (scope === undefined) source.sync();
      else scope.runInAsyncScope(source.sync, source);
    }
  }

  /** Resolves once every source has recorded its outcomes and closed; `undefined` with none bound. */
  quiesce(): Promise<unknown> | undefined {
    const list = this.#list;
    if (list === undefined || list.length === 0) return undefined;
    return Promise.all(list.map((source) => source.quiesce()));
  }
}
