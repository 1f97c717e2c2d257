/**
 * Sets `map[key] = value` as an own, enumerable, writable, configurable property, whatever the
 * key. A plain assignment of `"__proto__"` would change the object's prototype instead, and the
 * entry would vanish from `Object.keys` and JSON: a source or worker may be named so. The maps
 * stay plain objects with `Object.prototype`, as the published types promise.
 *
 * @internal
 */
export function setEntry<V>(map: Record<string, V>, key: string, value: V): void {
  Object.defineProperty(map, key, { value, enumerable: true, writable: true, configurable: true });
}
