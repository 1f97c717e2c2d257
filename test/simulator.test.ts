/**
 * The seeded simulator of SPEC 12: the core alone, on virtual time, with random operations and
 * faults, every invariant of SPEC 8 checked after each step (see test/sim/driver.ts).
 *
 * Replay one seed: QMUX_SIM_SEED=<n> (a failure prints `seed=<n> step=<k>` and the last
 * operations). More: QMUX_SIM_SEEDS (default 200), QMUX_SIM_STEPS (default 600), QMUX_SIM_READS
 * (how often the reads are checked to change nothing, default 0.03 at each of a step's two points).
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Core } from '../src/core/core.js';
import { type CoreJob, State } from '../src/core/job-record.js';
import { Lane } from '../src/core/lane.js';
import { Note } from '../src/core/outbox.js';
import { Simulation, type SimOptions } from './sim/driver.js';

const SEEDS = Number(process.env.QMUX_SIM_SEEDS ?? 200);
const STEPS = Number(process.env.QMUX_SIM_STEPS ?? 600);
const ONLY = process.env.QMUX_SIM_SEED;
/**
 * The time a run may take: the config's default for the default run, and more for a longer one
 * (2,000 seeds x 800 steps take about 100 s here), which otherwise finishes and is then marked
 * failed for its time alone.
 */
const TIMEOUT = Math.max(30_000, SEEDS * STEPS * 0.25);

/** Runs one seed; a failure's message starts with the seed and step that replay it. */
function simulate(seed: number, options: SimOptions): { steps: number; starts: number; jobs: number; reads: number } {
  const sim = new Simulation(seed, options);
  try {
    return sim.run();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const replay = `seed=${seed} step=${sim.stepNo} (replay: QMUX_SIM_SEED=${seed} QMUX_SIM_STEPS=${options.steps})`;
    throw new Error(`${replay}: ${message}\nlast operations:\n  ${sim.log.join('\n  ')}`, { cause: error });
  }
}

describe('the core under the seeded simulator (SPEC 12)', () => {
  it(
    `keeps every invariant of SPEC 8 over ${ONLY === undefined ? `${SEEDS} seeds` : `seed ${ONLY}`} x ${STEPS} random steps`,
    () => {
      const seeds = ONLY === undefined ? Array.from({ length: SEEDS }, (_, i) => i + 1) : [Number(ONLY)];
      let steps = 0;
      let starts = 0;
      let jobs = 0;
      let reads = 0;
      const began = performance.now();
      for (const seed of seeds) {
        const summary = simulate(seed, { steps: STEPS });
        steps += summary.steps;
        starts += summary.starts;
        jobs += summary.jobs;
        reads += summary.reads;
      }
      const ms = performance.now() - began;
      if (process.env.QMUX_SIM_REPORT !== undefined) {
        console.log(`simulator: ${seeds.length} seeds, ${steps} steps, ${jobs} jobs, ${starts} starts, ${reads} read checks in ${Math.round(ms)} ms`);
      }
      // Steps as the driver counted them running, not as asked for.
      expect(steps).toBe(seeds.length * STEPS);
      // The default run drives the core alone for at least 100,000 steps (SPEC 12).
      if (ONLY === undefined && process.env.QMUX_SIM_SEEDS === undefined && process.env.QMUX_SIM_STEPS === undefined) {
        expect(steps).toBeGreaterThanOrEqual(100_000);
      }
      expect(starts).toBeGreaterThan(0);
      expect(reads).toBeGreaterThan(0);
    },
    TIMEOUT,
  );

  it(
    'keeps them with promotions in progress across steps (a promotion batch of 1 or 2 jobs)',
    () => {
      const seeds = ONLY === undefined ? Array.from({ length: SEEDS / 2 }, (_, i) => i + 1) : [Number(ONLY)];
      let starts = 0;
      for (const seed of seeds) starts += simulate(seed, { steps: STEPS, promoteStep: 1 + (seed % 2) }).starts;
      expect(starts).toBeGreaterThan(0);
    },
    TIMEOUT,
  );

  it('reports the seed and step that replay a broken core, the same on every replay', () => {
    // A core that promotes delayed jobs a little late: the simulator must notice.
    const sabotage = (core: Core): void => {
      const promote = core.promote.bind(core);
      core.promote = (now: number) => promote(now - 0.5);
    };
    const failure = (seed: number): string | undefined => {
      try {
        simulate(seed, { steps: 300, sabotage });
        return undefined;
      } catch (error) {
        return (error as Error).message;
      }
    };
    let caught: string | undefined;
    let seed = 1;
    for (; seed <= 50 && caught === undefined; seed++) caught = failure(seed);
    expect(caught).toMatch(/^seed=\d+ step=\d+ /);
    const firstLine = (message: string | undefined): string | undefined => message?.split('\n')[0];
    expect(firstLine(failure(seed - 1))).toBe(firstLine(caught));
  });
});

describe('the clock rule of issue 33 (defect 4) under the simulator', () => {
  it('catches a shell that starts jobs with the reading it took before timing attempts out, on a seed that replays', () => {
    // User code (a `failed` listener, abort listeners, retry hooks) takes virtual time in half
    // the runs: a pass that times an attempt out and then starts with its first reading dates a
    // deadline or a rate window before that code returned.
    const failure = (seed: number): string | undefined => {
      try {
        simulate(seed, { steps: 300, staleClockAfterExpire: true });
        return undefined;
      } catch (error) {
        return (error as Error).message;
      }
    };
    let caught: string | undefined;
    let seed = 1;
    for (; seed <= 100 && caught === undefined; seed++) caught = failure(seed);
    expect(caught).toMatch(/^seed=\d+ step=\d+ .*before user code returned at/);
    const firstLine = (message: string | undefined): string | undefined => message?.split('\n')[0];
    expect(firstLine(failure(seed - 1))).toBe(firstLine(caught));
    // The same seed with the shell's rule kept runs clean.
    expect(() => simulate(seed - 1, { steps: 300 })).not.toThrow();
  });
});

describe('the simulator’s report of a failure', () => {
  it('names the notes it expected and got (a stray note after a cancel)', () => {
    const sabotage = (core: Core): void => {
      const cancel = core.cancel.bind(core);
      core.cancel = (job, reason) => {
        const done = cancel(job, reason);
        core.outbox.record(Note.Paused, undefined, undefined, 0); // a note the model does not expect
        return done;
      };
    };
    let message = '';
    for (let seed = 1; seed <= 50 && message === ''; seed++) {
      try {
        new Simulation(seed, { steps: 300, sabotage }).run();
      } catch (error) {
        message = (error as Error).message;
      }
    }
    expect(message).toMatch(/notes of cancel/);
    expect(message).toMatch(/expected \[Cancelled\(/);
    expect(message).toMatch(/got \[Cancelled\([^\]]*Paused\(\)\]/);
  });
});

describe('reads change nothing (SPEC 12) under the simulator', () => {
  it('catches a read that changes the state, naming the read, on a seed that replays', () => {
    // A `dueLength` that catches up (moves the due jobs a promotion in progress still holds with
    // the delayed ones into the due order): what a strategy's `view.length` once did.
    const descriptor = Object.getOwnPropertyDescriptor(Lane.prototype, 'dueLength') as PropertyDescriptor;
    const read = descriptor.get as (this: Lane) => number;
    Object.defineProperty(Lane.prototype, 'dueLength', {
      ...descriptor,
      get(this: Lane): number {
        const delayed = this.delayed;
        if (this.keys === undefined && delayed.horizon !== -Infinity) {
          while (delayed.nextDueAt() <= delayed.horizon) {
            const job = delayed.shiftDue(Infinity) as CoreJob;
            job.state = State.Due;
            this.due.pushPromoted(job);
          }
          delayed.horizon = -Infinity;
        }
        return read.call(this);
      },
    });
    try {
      const failure = (seed: number): string | undefined => {
        try {
          simulate(seed, { steps: 300, readChecks: 1, promoteStep: 1 });
          return undefined;
        } catch (error) {
          return (error as Error).message;
        }
      };
      let caught: string | undefined;
      let seed = 1;
      for (; seed <= 50 && !/reads changed/.test(caught ?? ''); seed++) caught = failure(seed);
      expect(caught).toMatch(/^seed=\d+ step=\d+ .*reads changed the core's state .*dueLength.*due\.length was \d+, is now \d+/);
      const firstLine = (message: string | undefined): string | undefined => message?.split('\n')[0];
      expect(firstLine(failure(seed - 1))).toBe(firstLine(caught));
    } finally {
      Object.defineProperty(Lane.prototype, 'dueLength', descriptor);
    }
    // Put back, the same seeds run clean.
    expect(() => simulate(1, { steps: 300, readChecks: 1, promoteStep: 1 })).not.toThrow();
  });
});

describe('the simulator drives the core alone (SPEC 12)', () => {
  it('imports no shell module: no worker, public source, job handle or option parsing', () => {
    const shell = /^\.\.\/\.\.\/src\/(index|sources\/.*|handles\/.*|remote\/.*|shell\/.*)\.js$/;
    for (const file of ['test/sim/driver.ts', 'test/sim/purity.ts']) {
      const text = readFileSync(new URL(`../${file}`, import.meta.url), 'utf8');
      const imports = [...text.matchAll(/^import [^;]*? from '([^']+)';$/gms)].map((match) => match[1] as string);
      expect(imports.length).toBeGreaterThan(0);
      expect(imports.filter((from) => shell.test(from))).toEqual([]);
    }
  });
});
