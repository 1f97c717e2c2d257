import { describe, expect, it } from 'vitest';
import { SampledAdds } from '../src/core/sampled-adds.js';
import type { JobRecord } from '../src/handles/job.js';
import { UNTIMED } from '../src/core/job-record.js';
import { Rng } from './sim/prng.js';

/** What `SampledAdds` reads of a job: its add order and its due time. */
const jobOf = (seq: number, dueAt = UNTIMED): JobRecord => ({ seq, dueAt }) as unknown as JobRecord;

describe('SampledAdds: the add times of sampled jobs, by seq', () => {
  it('gives back each add time once, whatever the order jobs leave in (random runs against a map)', () => {
    for (let seed = 1; seed <= 40; seed++) {
      const rng = new Rng(seed);
      const adds = new SampledAdds();
      const model = new Map<number, number>(); // seq -> add time, in add order
      let seq = 0;
      for (let step = 0; step < 600; step++) {
        if (model.size === 0 || rng.chance(0.55)) {
          seq += rng.int(1, 3); // not every job is sampled: seqs have gaps
          const at = step * 10 + rng.int(0, 9);
          adds.add(jobOf(seq), at);
          model.set(seq, at);
        } else {
          // Mostly the oldest (a FIFO start), sometimes any (a priority queue, a cancel), sometimes one never added.
          const waiting = [...model.keys()];
          const pick = rng.chance(0.7) ? (waiting[0] as number) : rng.chance(0.8) ? (waiting[rng.int(0, waiting.length - 1)] as number) : seq + 1000;
          expect(adds.take(jobOf(pick)), `seed ${seed} step ${step}: take(${pick})`).toBe(model.get(pick));
          model.delete(pick);
          expect(adds.take(jobOf(pick)), 'a second take finds nothing').toBeUndefined();
        }
        expect(adds.empty).toBe(model.size === 0);
      }
      for (const [s, at] of model) expect(adds.take(jobOf(s))).toBe(at);
      expect(adds.empty).toBe(true);
    }
  });

  it('finds a job that joined after a younger one (its seq out of the rising order), and the others around it', () => {
    const adds = new SampledAdds();
    for (const [seq, at] of [
      [1, 10],
      [2, 20],
      [5, 30],
      [3, 40],
      [6, 50],
      [4, 60],
    ] as const)
      adds.add(jobOf(seq), at);
    expect([6, 3, 5, 1, 4, 2].map((seq) => adds.take(jobOf(seq)))).toEqual([50, 40, 30, 10, 60, 20]);
    expect(adds.empty).toBe(true);
  });

  it('says how long its oldest job has been due: from its add, from its due time once that passed, or -1', () => {
    const adds = new SampledAdds();
    expect(adds.oldestDueAge(100)).toBe(-1);
    adds.add(jobOf(1), 10);
    adds.add(jobOf(2, 500), 20); // delayed until 500
    expect(adds.oldestDueAge(100)).toBe(90);
    adds.take(jobOf(1));
    expect(adds.oldestDueAge(100)).toBe(-1); // the oldest is not due yet: the ones after it are younger
    expect(adds.oldestDueAge(650)).toBe(150);
    adds.take(jobOf(2));
    expect(adds.oldestDueAge(650)).toBe(-1);
  });

  it('finds the job due longest when it is not the oldest added: one added after a delayed job', () => {
    const adds = new SampledAdds();
    adds.add(jobOf(1, 10_000), 10); // delayed until 10 000
    adds.add(jobOf(2), 20); // due since its add
    adds.add(jobOf(3, 50), 30); // delayed until 50
    expect(adds.oldestDueAge(100)).toBe(80);
    adds.take(jobOf(2)); // a hole in the middle
    expect(adds.oldestDueAge(100)).toBe(50);
    expect(adds.oldestDueAge(40)).toBe(-1);
  });

  it('keeps its table no longer than what waits, however long it runs', () => {
    const adds = new SampledAdds();
    let wrong = 0;
    for (let seq = 1; seq <= 100_000; seq++) {
      adds.add(jobOf(seq), seq);
      if (seq > 20 && adds.take(jobOf(seq - 20)) !== seq - 20) wrong++;
    }
    expect(wrong).toBe(0);
    // 21 at most wait at once: room for 64 (doubled while more than half full; a table that only
    // grew would have room for 131,072).
    expect(adds.room).toBe(64);
    for (let seq = 99_981; seq <= 100_000; seq++) expect(adds.take(jobOf(seq))).toBe(seq);
    expect(adds.empty).toBe(true);
  });

  it('drops the holes left behind a job that stays: the table follows what waits, not what passed', () => {
    const adds = new SampledAdds();
    adds.add(jobOf(1), 1); // stays at the head for good (a priority queue's stuck job)
    for (let seq = 2; seq <= 100_000; seq++) {
      adds.add(jobOf(seq), seq);
      expect(adds.take(jobOf(seq))).toBe(seq); // leaves out of order: a hole behind the head
    }
    expect(adds.room).toBeLessThanOrEqual(16);
    expect(adds.oldestDueAge(200_000)).toBe(199_999);
    expect(adds.take(jobOf(1))).toBe(1);
    expect(adds.empty).toBe(true);
  });
});
