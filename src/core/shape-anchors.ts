/**
 * One instance of each short-lived hot class, kept for as long as qmux is loaded.
 *
 * V8 gives the instances of a class a hidden class (a "map"), reached from the constructor's
 * first map by one transition per field, and those transitions hold their maps weakly. Once
 * every instance is gone (a queue drained, then a full garbage collection), the map is
 * collected, and with it every piece of optimized code that checks for it and the type
 * feedback that names it: the next jobs run unoptimized until V8 has watched them again and
 * compiled it all anew. Without these anchors, a no-op job cost about 1.5x as much in a run
 * that came after such a collection as in one that did not (bench/RESULTS.md, "Hidden classes
 * that die between runs").
 *
 * @internal
 */
const anchors: object[] = [];

/** Keeps `instance` (made for this alone, holding nothing of a user's) alive, and with it its class's map. */
export function keepShape(instance: object): void {
  anchors.push(instance);
}
