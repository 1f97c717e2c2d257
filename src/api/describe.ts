/**
 * How a message shows a value qmux did not make (a thrown value, a cancel reason): `String(value)`,
 * or an Error's message. Never a throw of its own: a null-prototype object, or a `toString` that
 * throws, is shown by its kind (`[object Object]`), so that describing a fault cannot become
 * another one in the middle of handling it.
 *
 * @internal
 */
export function safeString(value: unknown): string {
  try {
    return String(value);
  } catch {
    return kindOf(value);
  }
}

/** Whether `value` is an Error, never throwing (a revoked Proxy throws on `instanceof`). @internal */
export function isError(value: unknown): value is Error {
  try {
    return value instanceof Error;
  } catch {
    return false;
  }
}

/** An Error's message, else {@link safeString}. @internal */
export function messageOf(value: unknown): string {
  try {
    return value instanceof Error ? String(value.message) : String(value);
  } catch {
    return kindOf(value);
  }
}

function kindOf(value: unknown): string {
  try {
    return Object.prototype.toString.call(value);
  } catch {
    return '[a value that cannot be shown]'; // a revoked Proxy
  }
}

/**
 * How an argument check shows the value it refuses: a string quoted, a function, an array or an
 * object by its kind, a bigint with its `n`.
 *
 * @internal
 */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'function') return 'a function';
  if (value === null) return 'null';
  if (typeof value === 'object') return Array.isArray(value) ? 'an array' : 'an object';
  // String(10n) is "10": indistinguishable from the number the option wanted.
  if (typeof value === 'bigint') return `${value}n`;
  return String(value);
}
