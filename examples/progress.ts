// Progress per job: a function worker downloads (pretends to) four files two at a time, and each
// job reports how far it got with job.updateProgress. The worker's `progress` event drives one
// progress bar per job (cli-progress) on a terminal, or prints one line per report when stdout
// is not a TTY (a pipe, a CI log). handle.progress holds the latest report at any time.
//
//   npm run build
//   npx tsx examples/progress.ts
import cliProgress from 'cli-progress';
import { Worker, type Job, type Task } from 'qmux';

interface Chunks {
  done: number;
  total: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One job: "downloads" `chunks` chunks of `file`, reporting after each. A function worker calls it with its Job. */
function download(file: string, chunks: number): Task<string> {
  return async (job: Job<unknown>) => {
    for (let done = 1; done <= chunks; done++) {
      await sleep(20 + ((file.length * done) % 4) * 10);
      job.updateProgress({ done, total: chunks } satisfies Chunks);
    }
    return `${file}: ${chunks} chunks`;
  };
}

const worker = new Worker<string>({ concurrency: 2 });
const downloads = worker.bindQueue({ name: 'downloads' });
const files: Array<[string, number]> = [
  ['a.bin', 4],
  ['b.bin', 6],
  ['c.bin', 3],
  ['d.bin', 5],
];

const tty = process.stdout.isTTY === true;
const bars = tty
  ? new cliProgress.MultiBar({ format: ' {file} {bar} {value}/{total} chunks', hideCursor: true }, cliProgress.Presets.shades_classic)
  : undefined;
const barOf = new Map<string, cliProgress.SingleBar>();
const fileOf = new Map<string, string>();

worker.on('progress', (job, value) => {
  const { done, total } = value as Chunks;
  const file = fileOf.get(job.id) as string;
  if (bars === undefined) {
    console.log(`${file}  ${'#'.repeat(done).padEnd(total, '.')}  ${done}/${total}`);
    return;
  }
  let bar = barOf.get(job.id);
  if (bar === undefined) {
    bar = bars.create(total, 0, { file });
    barOf.set(job.id, bar);
  }
  bar.update(done);
});

const handles = files.map(([file, chunks]) => {
  const handle = downloads.add(download(file, chunks));
  fileOf.set(handle.id, file);
  return handle;
});
const results = await Promise.all(handles.map((handle) => handle.result()));
bars?.stop();

console.log(`\n${results.join('\n')}`);
for (const [i, handle] of handles.entries()) {
  const { done, total } = handle.progress as Chunks;
  console.log(`${files[i]?.[0]} handle.progress: ${done}/${total}, status ${handle.status}`);
}
