import { describe, expect, it } from 'vitest';
import { KeyFifo } from '../src/core/keys/key-fifo.js';
import { COMPACT_MIN, earlierDue, FifoDueJobs } from '../src/core/due/due-jobs.js';
import { KeyedJobRecord } from '../src/handles/job.js';
import { State } from '../src/core/job-record.js';
import type { Source } from '../src/sources/source.js';
import { Rng } from './sim/prng.js';

const home = {} as Source;

function job(dueAt: number): KeyedJobRecord {
  const record = new KeyedJobRecord(home, undefined, 0, 'k');
  record.dueAt = dueAt;
  return record;
}

describe('KeyFifo: the due jobs of one key, linked through the jobs themselves', () => {
  it('gives the same jobs in the same order as FifoDueJobs under random pushes, ties, cancels and shifts', () => {
    for (let seed = 1; seed <= 40; seed++) {
      const rng = new Rng(seed);
      const random = (): number => rng.next();
      const fifo = new KeyFifo();
      const model = new FifoDueJobs();
      let clock = 0;
      const held: KeyedJobRecord[] = [];
      for (let step = 0; step < 400; step++) {
        const r = random();
        if (r < 0.3) {
          // Due on add: now on a clock that never goes back, often a tie with the latest.
          clock += random() < 0.7 ? 1 : 0;
          const fresh = job(clock);
          fifo.pushFresh(fresh);
          model.pushFresh(fresh);
          held.push(fresh);
        } else if (r < 0.5) {
          // A delayed job coming due: in due order, with ties and the odd earlier one.
          const promoted = job(clock - Math.floor(random() * 3));
          fifo.pushPromoted(promoted);
          model.pushPromoted(promoted);
          held.push(promoted);
        } else if (r < 0.65) {
          const live = held.filter((j) => j.state === State.Due);
          if (live.length === 0) continue;
          const victim = live[Math.floor(random() * live.length)] as KeyedJobRecord;
          victim.state = State.Cancelled;
          fifo.markRemoved();
          model.markRemoved();
        } else if (r < 0.72) {
          expect(fifo.peek()).toBe(model.peek());
        } else {
          const a = fifo.shift();
          const b = model.shift();
          expect(a).toBe(b);
          if (a !== undefined) a.state = State.Running;
        }
        expect(fifo.length).toBe(model.length);
      }
      const rest = fifo.drain();
      expect(new Set(rest)).toEqual(new Set(model.drain()));
      expect(fifo.length).toBe(0);
      expect(fifo.shift()).toBeUndefined();
    }
  });

  it('keeps due-time order, then add order, when a job ties with jobs pushed before it', () => {
    const fifo = new KeyFifo();
    const a = job(10);
    const b = job(10);
    const c = job(12);
    const early = job(10); // added last, due at the same time as a and b: after them by add order
    const earlier = job(9); // due before all of them
    for (const j of [a, b, c, early, earlier]) fifo.pushFresh(j);
    const out = [fifo.shift(), fifo.shift(), fifo.shift(), fifo.shift(), fifo.shift()];
    expect(out).toEqual([earlier, a, b, early, c]);
    for (let i = 1; i < out.length; i++) expect(earlierDue(out[i - 1] as KeyedJobRecord, out[i] as KeyedJobRecord)).toBe(true);
  });

  it('leaves no job linked to another once it has left, so a handle a user keeps holds no chain of jobs', () => {
    const fifo = new KeyFifo();
    const jobs = Array.from({ length: 2 * COMPACT_MIN + 3 }, (_, i) => job(i));
    for (const j of jobs) fifo.pushFresh(j);
    // Cancel most of them: a compaction unlinks the tombstones.
    for (const j of jobs.slice(0, 2 * COMPACT_MIN)) {
      j.state = State.Cancelled;
      fifo.markRemoved();
    }
    expect(fifo.length).toBe(3);
    const left = [fifo.shift(), fifo.shift(), fifo.shift()];
    expect(left).toEqual(jobs.slice(2 * COMPACT_MIN));
    for (const j of jobs) expect(j.nextInKey).toBeUndefined();

    // Tombstones left when the last live job goes are unlinked too.
    const more = [job(100), job(101), job(102)];
    for (const j of more) fifo.pushFresh(j);
    (more[0] as KeyedJobRecord).state = State.Cancelled;
    fifo.markRemoved();
    (more[1] as KeyedJobRecord).state = State.Cancelled;
    fifo.markRemoved();
    expect(fifo.shift()).toBe(more[2]);
    for (const j of more) expect(j.nextInKey).toBeUndefined();

    // And by a drain.
    const drained = [job(200), job(201)];
    for (const j of drained) fifo.pushPromoted(j);
    expect(fifo.drain()).toEqual(drained);
    for (const j of drained) expect(j.nextInKey).toBeUndefined();
  });
});
