import { describe, expect, it } from 'vitest';
import { Timing } from '../src/observe/timings.js';
import { Rng } from './sim/prng.js';

/** The exact `p`-th percentile of `values` (nearest rank), as `Timing` defines it. */
function exactPercentile(sorted: readonly number[], p: number): number {
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)] as number;
}

describe('Timing: percentiles from buckets read off the double', () => {
  it('puts p50, p90 and p99 within 0.2 % of the exact values, over values from 1 us to a day', () => {
    for (let seed = 1; seed <= 20; seed++) {
      const rng = new Rng(seed);
      const timing = new Timing();
      const values: number[] = [];
      // Log-uniform over 1 us to 10^8 ms, rounded to whole microseconds as timings are counted.
      for (let i = 0; i < 2000; i++) {
        const ms = Math.round(10 ** (rng.next() * 11 - 3) * 1000) / 1000;
        values.push(ms);
        timing.record(ms);
      }
      values.sort((a, b) => a - b);
      const summary = timing.summary();
      expect(summary.count).toBe(2000);
      for (const p of [50, 90, 99] as const) {
        const exact = exactPercentile(values, p);
        const got = summary[`p${p}`] as number;
        expect(Math.abs(got - exact) / exact, `seed ${seed}: p${p} ${got} against ${exact}`).toBeLessThanOrEqual(0.002 + 0.0005 / exact);
      }
      expect(summary.max).toBe(Math.round((values.at(-1) as number) * 1000) / 1000);
    }
  });

  it('orders values by bucket: a larger value never lands in a lower percentile', () => {
    // Every power of two and its neighbours, where a bucket index could wrap or overflow.
    const timing = new Timing();
    const values: number[] = [];
    for (let e = -3; e <= 40; e++) for (const f of [0.999, 1, 1.001, 1.5, 1.999]) values.push(Math.round(2 ** e * f * 1000) / 1000 || 0.001);
    for (const ms of values) timing.record(ms);
    values.sort((a, b) => a - b);
    const summary = timing.summary();
    for (const p of [50, 90, 99] as const) {
      const exact = exactPercentile(values, p);
      expect(Math.abs((summary[`p${p}`] as number) - exact) / exact).toBeLessThanOrEqual(0.002);
    }
  });

  it('counts 0 and sub-microsecond values as 1 us, and an empty timing as nulls (nothing to report), its count and sum 0', () => {
    const timing = new Timing();
    expect(timing.summary()).toEqual({ count: 0, mean: null, p50: null, p90: null, p99: null, max: null, sum: 0 });
    timing.record(0);
    timing.record(0.0004);
    expect(timing.summary()).toMatchObject({ count: 2, p50: 0, max: 0, sum: 0 });
    timing.record(0.001);
    expect(timing.summary()).toMatchObject({ count: 3, p99: 0.001, max: 0.001 });
  });
});
