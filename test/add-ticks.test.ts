/**
 * AddTicks: the add times of a FIFO source by batch of adds (the age of its oldest due job).
 */
import { describe, expect, it } from 'vitest';
import { AddTicks } from '../src/core/add-ticks.js';

describe('AddTicks', () => {
  it('gives the start of the batch of any waiting job, and keeps only what the oldest needs', () => {
    const batches = new AddTicks();
    // Batches begin at seqs 1, 5, 9...; every job of a batch was added at its begin time or later.
    for (let b = 0; b < 100; b++) batches.note(1 + 4 * b, 10 * b, 1);
    expect(batches.length).toBe(100); // the oldest waiting is seq 1: all are needed
    expect(batches.addedBy(1)).toBe(0);
    expect(batches.addedBy(3)).toBe(0);
    expect(batches.addedBy(5)).toBe(10);
    expect(batches.addedBy(200)).toBe(490); // seq 197 began batch 49
    expect(batches.length).toBe(51); // those before batch 49 are gone
    batches.note(1000, 5000, 1000); // the source emptied, then this one came
    expect(batches.length).toBe(1);
    expect(batches.addedBy(1000)).toBe(5000);
    expect(batches.addedBy(999)).toBeUndefined();
    batches.clear();
    expect(batches.addedBy(1000)).toBeUndefined();
  });

  it('grows and compacts its table as entries come and go', () => {
    const batches = new AddTicks();
    let oldest = 1;
    for (let seq = 1; seq <= 10_000; seq++) {
      if (seq % 3 === 0) oldest = seq - 20; // jobs start: about 20 wait
      batches.note(seq, seq * 2, Math.max(1, oldest));
      expect(batches.length).toBeLessThanOrEqual(24);
    }
    expect(batches.addedBy(9990)).toBe(19_980);
  });
});

describe('AddTicks, bounded', () => {
  it('keeps at most 4096 entries while the oldest job waits, every one a lower bound of its jobs\u2019 add times', () => {
    const batches = new AddTicks();
    for (let seq = 1; seq <= 20_000; seq++) {
      batches.note(seq, seq * 10, 1); // the job of seq 1 waits all along
      expect(batches.length).toBeLessThanOrEqual(4096);
    }
    expect(batches.addedBy(1)).toBe(10);
    for (const seq of [2, 777, 15_000, 20_000]) {
      const at = batches.addedBy(seq) as number;
      expect(at).toBeLessThanOrEqual(seq * 10);
    }
    expect(batches.addedBy(20_000)).toBe(200_000); // the newest entry is never thinned
  });
});
