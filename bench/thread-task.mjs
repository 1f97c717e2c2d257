// The task of the threads workload: as small as a task can be, so the cell measures the cost of
// getting work into a thread and the result back. qmux calls it as (data, ctx); the raw pools as
// (data).
export default function task(data) {
  return data + 1;
}
