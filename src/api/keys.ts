/** What `keyStats(key)` returns: one key's figures (all zero and not paused for a key that is not active). */
export interface KeyStats {
  /** Jobs of the key waiting: `due + delayed`. */
  waiting: number;
  /** Waiting jobs whose due time has passed. */
  due: number;
  /** Waiting jobs whose due time has not come yet. */
  delayed: number;
  /** Jobs of the key running now. */
  running: number;
  /** Whether the key is paused (`pauseKey`). */
  paused: boolean;
}
