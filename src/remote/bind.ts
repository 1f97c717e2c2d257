import * as check from '../internal/validate.js';
import { checkBindOptions, type BindOptions } from '../source.js';
import type { RemoteAdapter, RemoteBindOptions } from './adapter.js';

const REQUIRED = ['claim', 'complete', 'fail', 'release', 'extend', 'close'] as const;
const OPTIONAL = ['progress', 'watch'] as const;
const REMOTE_BIND_OPTIONS: readonly string[] = ['priority', 'weight', 'name', 'capacity', 'concurrency', 'rateLimit', 'prefetch'];

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
