/**
 * The delayed jobs of a source (issue 13): jobs pushed in due order join a sorted run, the others
 * a heap; whatever the mix, they come out earliest first (due time, then add order), cancelled
 * ones never, and the counts hold.
 */
import { describe, expect, it } from 'vitest';
import { DelayedJobs } from '../src/core/due/due-jobs.js';
import type { JobRecord } from '../src/handles/job.js';
import { State } from '../src/core/job-record.js';
import { Rng } from './sim/prng.js';

/** Just the fields the delayed jobs read. */
function record(seq: number, dueAt: number): JobRecord {
  return { seq, dueAt, state: State.Delayed } as unknown as JobRecord;
}

const byDue = (a: JobRecord, b: JobRecord) => a.dueAt - b.dueAt || a.seq - b.seq;

describe('DelayedJobs', () => {
  for (const [name, inOrder] of [
    ['all in due order (one run)', 1],
    ['mostly in due order, with some out of it', 0.8],
    ['in random order (the heap)', 0],
  ] as const) {
    it(`gives every live job back earliest first: ${name}, with cancels`, () => {
      for (let seed = 1; seed <= 20; seed++) {
        const rng = new Rng(seed);
        const delayed = new DelayedJobs();
        const jobs: JobRecord[] = [];
        let due = 100;
        for (let seq = 1; seq <= 400; seq++) {
          // In order: the due time never goes down (ties keep add order); else anywhere.
          if (rng.next() < inOrder) due += Math.floor(rng.next() * 3);
          const job = record(seq, rng.next() < inOrder ? due : 100 + Math.floor(rng.next() * 600));
          jobs.push(job);
          delayed.push(job);
          if (rng.next() < 0.2) {
            // Cancel a job pushed earlier: it stays as a tombstone until reached or compacted.
            const victim = jobs[Math.floor(rng.next() * jobs.length)] as JobRecord;
            if (victim.state === State.Delayed) {
              victim.state = State.Cancelled;
              delayed.markRemoved();
            }
          }
        }
        const live = jobs.filter((job) => job.state === State.Delayed).sort(byDue);
        expect(delayed.length).toBe(live.length);
        const half = (live[live.length >> 1] as JobRecord).dueAt;
        expect(delayed.countDueBy(half)).toBe(live.filter((job) => job.dueAt <= half).length);
        const out: JobRecord[] = [];
        expect(delayed.nextDueAt()).toBe((live[0] as JobRecord).dueAt);
        expect(delayed.shiftDue((live[0] as JobRecord).dueAt - 1)).toBeUndefined();
        for (let job = delayed.shiftDue(Infinity); job !== undefined; job = delayed.shiftDue(Infinity)) out.push(job as JobRecord);
        expect(out.map((job) => job.seq)).toEqual(live.map((job) => job.seq));
        expect(delayed.length).toBe(0);
        expect(delayed.nextDueAt()).toBe(Infinity);
      }
    });
  }

  it('breaks a tie of due times between the run and the heap by add order', () => {
    const delayed = new DelayedJobs();
    const [a, b, c, d] = [record(1, 10), record(2, 60), record(3, 40), record(4, 50)];
    for (const job of [a, b, c, d]) delayed.push(job as JobRecord); // a, b in the run; c, d below its tail: the heap
    (b as JobRecord).state = State.Cancelled;
    delayed.markRemoved();
    expect(delayed.shiftDue(10)).toBe(a);
    expect(delayed.nextDueAt()).toBe(40); // the cancelled b, alone in the run, is dropped: the run is empty
    const e = record(5, 40); // a new run, tied with c on the due time, added after it
    delayed.push(e);
    expect([delayed.shiftDue(100), delayed.shiftDue(100), delayed.shiftDue(100)]).toEqual([c, e, d]);
  });

  it('counts the due jobs at once only when that needs no walk: the run all due, nothing cancelled, nothing due in the heap', () => {
    const delayed = new DelayedJobs();
    const run = [record(1, 10), record(2, 10), record(3, 20)];
    for (const job of run) delayed.push(job);
    expect(delayed.quickCountDueBy(20)).toBe(3);
    expect(delayed.quickCountDueBy(15)).toBe(-1); // the run is not all due: a walk counts 2
    expect(delayed.countDueBy(15)).toBe(2);
    const early = record(4, 5); // below the run's tail: the heap
    delayed.push(early);
    expect(delayed.quickCountDueBy(20)).toBe(-1);
    expect(delayed.countDueBy(20)).toBe(4);
    expect(delayed.shiftDue(5)).toBe(early);
    expect(delayed.quickCountDueBy(20)).toBe(3);
    (run[1] as JobRecord).state = State.Cancelled;
    delayed.markRemoved();
    expect(delayed.quickCountDueBy(20)).toBe(-1); // a tombstone in the run: a walk counts the live ones
    expect(delayed.countDueBy(20)).toBe(2);
  });

  it('drains every live job of both the run and the heap', () => {
    const delayed = new DelayedJobs();
    const jobs = [record(1, 10), record(2, 20), record(3, 5), record(4, 30), record(5, 1)];
    for (const job of jobs) delayed.push(job);
    (jobs[1] as JobRecord).state = State.Cancelled;
    delayed.markRemoved();
    expect(delayed.peek()?.seq).toBe(5);
    expect(
      delayed
        .drain()
        .map((job) => job.seq)
        .sort(),
    ).toEqual([1, 3, 4, 5]);
    expect(delayed.length).toBe(0);
    // Emptied, it takes new jobs in order again.
    delayed.push(record(6, 3));
    expect(delayed.shiftDue(3)?.seq).toBe(6);
  });
});
