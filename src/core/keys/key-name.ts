import { describeValue } from '../../api/describe.js';

/**
 * A job's key as compared: `String(key)` of a string or a finite number; anything else is a
 * `TypeError` naming `what` (the `key` option, or what `keys.by` returned).
 *
 * @internal
 */
export function keyName(what: string, key: unknown): string {
  if (typeof key === 'string') return key;
  if (typeof key === 'number' && Number.isFinite(key)) return String(key);
  throw new TypeError(`qmux: ${what} must be a string or a finite number, got ${describeValue(key)}`);
}
