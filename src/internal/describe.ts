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
