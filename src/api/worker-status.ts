/**
 * A worker's status:
 *
 * | status | meaning |
 * |---|---|
 * | `initiated` | created with `autoRun: false`, never started |
 * | `idle` | started; nothing runs, nothing waits |
 * | `running` | started, with work (running or waiting, delayed included) |
 * | `pausing` | paused, jobs still running |
 * | `paused` | paused, nothing running |
 * | `stopping` | `stop()` called, jobs still running |
 * | `stopped` | stopped, nothing running |
 * | `halted` | fail-stopped on a broken invariant; `start()` recovers |
 */
export type WorkerStatus = 'initiated' | 'idle' | 'running' | 'pausing' | 'paused' | 'stopping' | 'stopped' | 'halted';
