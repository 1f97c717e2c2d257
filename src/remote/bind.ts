import * as check from '../internal/validate.js';
import type { BindOptions } from '../api/bind-options.js';
import { checkBindOptions } from '../sources/source.js';
import type { RemoteAdapter, RemoteBindOptions } from './adapter.js';

const REQUIRED = ['claim', 'complete', 'fail', 'release', 'extend', 'close'] as const;
const OPTIONAL = ['progress', 'watch'] as const;
const REMOTE_BIND_OPTIONS: readonly string[] = ['priority', 'weight', 'name', 'capacity', 'concurrency', 'rateLimit', 'prefetch'];

/**
 * The adapters bound to a worker now, with where (worker and source): an adapter holds one
 * engine connection and one consumer's claims, so a second source on it would close them under
 * the first when it stops (issue 33). Weak: an adapter no one holds any more is forgotten.
 */
const boundAdapters = new WeakMap<object, string>();

/**
 * Notes `adapter` as bound at `where` (`worker "w1", source "emails"`) until {@link unbindAdapter}.
 *
 * @internal
 */
export function bindAdapter(adapter: object, where: string): void {
  boundAdapters.set(adapter, where);
}

/**
 * `adapter`'s source has closed it and left its worker: it may be bound again.
 *
 * @internal
 */
export function unbindAdapter(adapter: object): void {
  boundAdapters.delete(adapter);
}

/**
 * Checks `bindRemote(adapter, options)`: the adapter has the methods of SPEC 9 and a lock
 * duration, the options are bind options plus `prefetch`. Throws a `TypeError` or `RangeError`
 * naming what is wrong.
 *
 * @internal
 */
export function checkRemoteBind(
  adapter: unknown,
  options: RemoteBindOptions | undefined,
): { bind: BindOptions | undefined; prefetch: number | undefined } {
  if (adapter === null || typeof adapter !== 'object') {
    throw new TypeError(
      `qmux: bindRemote(adapter) needs a remote adapter (claim, complete, fail, release, extend, close), got ${check.describeValue(adapter)}`,
    );
  }
  const members = adapter as Record<string, unknown>;
  for (const name of REQUIRED) {
    if (typeof members[name] !== 'function') {
      throw new TypeError(`qmux: bindRemote(adapter): the adapter has no ${name}() method (it needs ${REQUIRED.join(', ')})`);
    }
  }
  for (const name of OPTIONAL) {
    if (members[name] !== undefined && typeof members[name] !== 'function') {
      throw new TypeError(`qmux: bindRemote(adapter): the adapter's ${name} must be a method or absent, got ${check.describeValue(members[name])}`);
    }
  }
  const boundAt = boundAdapters.get(adapter);
  if (boundAt !== undefined) {
    throw new TypeError(
      `qmux: bindRemote(adapter): this adapter is already bound (${boundAt}); make one adapter per worker (for BullMQ, a new BullMQSource for each bindRemote), or close() that source first`,
    );
  }
  const lock = (adapter as RemoteAdapter).lockDuration;
  if (typeof lock !== 'number' || Number.isNaN(lock) || lock <= 0) {
    const error = typeof lock === 'number' ? RangeError : TypeError;
    throw new error(`qmux: bindRemote(adapter): the adapter's lockDuration must be a number of ms > 0 or Infinity, got ${check.describeValue(lock)}`);
  }
  check.optionsObject('bindRemote() options', options);
  if (options === undefined) return { bind: undefined, prefetch: undefined };
  for (const key of Object.keys(options)) {
    if (!REMOTE_BIND_OPTIONS.includes(key)) {
      throw new TypeError(`qmux: unknown option "${key}" in bindRemote(); allowed: ${REMOTE_BIND_OPTIONS.join(', ')}`);
    }
  }
  const { prefetch, ...bind } = options;
  if (prefetch !== undefined) check.positiveInt('bindRemote option "prefetch"', prefetch);
  checkBindOptions('bindRemote()', bind);
  return { bind, prefetch };
}
