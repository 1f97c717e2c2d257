#!/usr/bin/env node
// What making one job record costs: 1,000,000 `newJobRecord` calls per round, inside a function,
// the best ns per record of rounds 6-15 (NOTEBOOK.md, "One house": a base class with class fields
// made the job handle, its subclass, three times slower to make).
//
//   node bench/job-record.mjs [dist=dist]
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const dir = process.argv[2] ?? 'dist';
const { newJobRecord } = await import(pathToFileURL(path.join(path.resolve(dir), 'handles', 'job.js')).href);
const home = { name: 'q' };

function measure() {
  let best = Infinity;
  let kept = [];
  for (let r = 0; r < 15; r++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < 1e6; i++) {
      const job = newJobRecord(home, i, 0, undefined, undefined);
      if ((i & 1023) === 0) kept.push(job); // some survive, as queued jobs do
    }
    const ns = Number(process.hrtime.bigint() - start) / 1e6;
    if (kept.length > 10_000) kept = [];
    if (r > 4) best = Math.min(best, ns);
  }
  return best;
}
console.log(JSON.stringify({ dist: dir, nsPerRecord: Math.round(measure() * 10) / 10 }));
