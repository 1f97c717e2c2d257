/**
 * The async context a job runs in (SPEC 13): each job carries the context of the call that added
 * it, captured as one `AsyncResource` at the add, and its handler and its events run inside it.
 *
 * Why one `AsyncResource` per add: it is the cheapest capture Node offers. `AsyncLocalStorage
 * .snapshot()` costs several times more, and a capture shared by consecutive adds would need a
 * cheap way to tell that the context is unchanged, which Node has not: `als.run()` on Node 20
 * swaps the store on the same execution resource, and on Node 24 the context frame it makes is
 * readable only through a new `AsyncResource` or snapshot (bench/README.md, "Async context").
 *
 * The module is loaded by the root entry, which must stay browser-safe (SPEC 14): `node:
 * async_hooks` is reached through `process.getBuiltinModule` when it exists, and where it does
 * not (a browser) there is no async context to carry and jobs run as called.
 *
 * @internal
 */
import { optionalNodeBuiltin } from './host.js';

/** What qmux needs of an `AsyncResource`. @internal */
export interface ContextScope {
  runInAsyncScope<A extends unknown[], R>(fn: (...args: A) => R, thisArg: unknown, ...args: A): R;
}

type ScopeClass = new (type: string) => ContextScope;

/** Node's `AsyncResource`, or `undefined` where the runtime has none. */
const Scope = optionalNodeBuiltin<{ AsyncResource?: ScopeClass }>('node:async_hooks')?.AsyncResource;

/**
 * The context qmux was loaded in (outside any `AsyncLocalStorage.run`, for a static import):
 * timers that outlive a job are armed in it, so that they neither keep a job's context alive nor
 * run later work in it.
 */
const rootScope: ContextScope | undefined = Scope === undefined ? undefined : new Scope('qmux.root');

/** Whether this runtime can carry async contexts (it has `node:async_hooks`). @internal */
export const contextsSupported = Scope !== undefined;

/** The caller's async context, to run a job's handler and events in later; `undefined` where there is none to carry. @internal */
export function captureContext(): ContextScope | undefined {
  return Scope === undefined ? undefined : new Scope('qmux.job');
}

/** Calls `fn(...args)` in the context qmux was loaded in (see {@link rootScope}). @internal */
export function inRootContext<A extends unknown[], R>(fn: (...args: A) => R, ...args: A): R {
  return rootScope === undefined ? fn(...args) : rootScope.runInAsyncScope(fn, undefined, ...args);
}
