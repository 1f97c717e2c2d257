/**
 * Argument checks shared by every public entry point. Each throws synchronously with a message
 * that names the option and says what is allowed, so a mistake is caught where it is made.
 *
 * @internal
 */

import { describeValue as show } from '../api/describe.js';

/** A positive integer or `Infinity`: worker and source concurrency. */
export function positiveIntOrInfinity(name: string, value: unknown): number {
  if (typeof value !== 'number') {
    throw new TypeError(`qmux: ${name} must be a positive integer or Infinity, got ${show(value)}`);
  }
  if (!(value === Infinity || (Number.isInteger(value) && value >= 1))) {
    throw new RangeError(`qmux: ${name} must be a positive integer or Infinity, got ${show(value)}`);
  }
  return value;
}

/** An integer >= 1. */
export function positiveInt(name: string, value: unknown): number {
  if (typeof value !== 'number') throw new TypeError(`qmux: ${name} must be an integer >= 1, got ${show(value)}`);
  if (!Number.isInteger(value) || value < 1) {
    throw new RangeError(`qmux: ${name} must be an integer >= 1, got ${show(value)}`);
  }
  return value;
}

/** An integer >= 0. */
export function nonNegativeInt(name: string, value: unknown): number {
  if (typeof value !== 'number') throw new TypeError(`qmux: ${name} must be an integer >= 0, got ${show(value)}`);
  if (!Number.isInteger(value) || value < 0) throw new RangeError(`qmux: ${name} must be an integer >= 0, got ${show(value)}`);
  return value;
}

/** A finite number. */
export function finiteNumber(name: string, value: unknown): number {
  if (typeof value !== 'number') throw new TypeError(`qmux: ${name} must be a finite number, got ${show(value)}`);
  if (!Number.isFinite(value)) throw new RangeError(`qmux: ${name} must be a finite number, got ${show(value)}`);
  return value;
}

/** A finite number > 0. */
export function positiveFiniteNumber(name: string, value: unknown): number {
  if (typeof value !== 'number') throw new TypeError(`qmux: ${name} must be a finite number > 0, got ${show(value)}`);
  if (!Number.isFinite(value) || value <= 0) throw new RangeError(`qmux: ${name} must be a finite number > 0, got ${show(value)}`);
  return value;
}

/** An object with no key outside `allowed` (the caller has checked that it is an object). */
export function knownFields(name: string, value: object, allowed: readonly string[]): void {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) throw new TypeError(`qmux: unknown field "${key}" in ${name}; allowed: ${allowed.join(', ')}`);
  }
}

/** A finite number >= 0 (milliseconds). */
export function nonNegativeMs(name: string, value: unknown): number {
  if (typeof value !== 'number') {
    throw new TypeError(`qmux: ${name} must be a finite number of ms >= 0, got ${show(value)}`);
  }
  if (!Number.isFinite(value) || value < 0) {
    throw new RangeError(`qmux: ${name} must be a finite number of ms >= 0, got ${show(value)}`);
  }
  return value;
}

/** The longest delay `setTimeout` keeps: a longer one fires after 1 ms (with a warning). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** Refuses a duration that a timer cannot wait for (see {@link MAX_TIMER_MS}). */
export function timerMs(name: string, value: number): number {
  if (value > MAX_TIMER_MS) {
    throw new RangeError(`qmux: ${name} must be at most ${MAX_TIMER_MS} ms (about 24.8 days, the longest timer Node keeps), got ${show(value)}`);
  }
  return value;
}

/** A non-empty string. */
export function nonEmptyString(name: string, value: unknown): string {
  if (typeof value !== 'string' || value.length === 0) {
    throw new TypeError(`qmux: ${name} must be a non-empty string, got ${show(value)}`);
  }
  return value;
}

/** A boolean. */
export function boolean(name: string, value: unknown): boolean {
  if (typeof value !== 'boolean') throw new TypeError(`qmux: ${name} must be true or false, got ${show(value)}`);
  return value;
}

/** A plain options object, or `undefined`. */
export function optionsObject(name: string, value: unknown): void {
  if (value !== undefined && (value === null || typeof value !== 'object' || Array.isArray(value))) {
    throw new TypeError(`qmux: ${name} must be an object, got ${show(value)}`);
  }
}

/** A `Date` or epoch milliseconds, returned as epoch ms. */
export function dateOrEpochMs(name: string, value: unknown): number {
  const ms = value instanceof Date ? value.getTime() : value;
  if (typeof ms !== 'number' || !Number.isFinite(ms)) {
    const got = value instanceof Date ? 'an invalid Date' : show(value);
    throw new TypeError(`qmux: ${name} must be a valid Date or epoch milliseconds, got ${got}`);
  }
  return ms;
}

/** An `AbortSignal`. */
export function abortSignal(name: string, value: unknown): AbortSignal {
  if (!(value instanceof AbortSignal)) throw new TypeError(`qmux: ${name} must be an AbortSignal, got ${show(value)}`);
  return value;
}

export { describeValue } from '../api/describe.js';
