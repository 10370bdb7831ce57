/**
 * `npm run bench -- --primaries <second database url>` (issue 28, docs/scaling.md): the "one database per
 * group of queues" path measured. One variant per child process, the three interleaved in `rounds`:
 *
 * - `one`: 40,000 jobs on the first primary, one node (10 slots);
 * - `one-two-nodes`: the same 40,000 jobs, two nodes in this process (10 slots each), so that the node
 *   side matches `two`;
 * - `two`: 20,000 jobs on each primary, one node bound to each, both nodes in this process: a process
 *   serving two databases, each claim on one of them.
 *
 * Each reports jobs/s (all jobs over the window), the node process's CPU and the two clusters' backends'
 * CPU per job (backends of the bench database's name on either cluster), and WAL bytes per job on each
 * primary (`pg_current_wal_lsn()` deltas). Both are per cluster and per database name: the second URL must
 * be another cluster (another port) with a database of the same name, or each primary's WAL counts both.
 * On this 2-core machine the two clusters share the cores with the nodes, so `two` can show what
 * splitting costs and what it moves, not the gain of a second machine.
 */
import { childInput, childMain, closeWindow, openWindow } from "./lib/child.js";
import { perJob } from "./lib/cpu-meter.js";
import { databaseName, deferred, msBetween, nowNs, walBytes, withTimeout } from "./lib/common.js";
import { PawlSystem } from "./systems/pawl.js";
import type { RunningWorkers } from "./systems/types.js";
import type { TwoPrimariesInput, TwoPrimariesResult } from "./two-primaries-run.js";

async function run(input: TwoPrimariesInput): Promise<TwoPrimariesResult> {
  const [first, second] = input.urls;
  // Which primary each node is bound to, and how many jobs each primary holds.
  const plan: { url: string; nodes: number; jobs: number }[] =
    input.variant === "two"
      ? [
          { url: first, nodes: 1, jobs: input.jobs / 2 },
          { url: second, nodes: 1, jobs: input.jobs / 2 },
        ]
      : [{ url: first, nodes: input.variant === "one" ? 1 : 2, jobs: input.jobs }];
  const systems = plan.map((p) => Array.from({ length: p.nodes }, () => new PawlSystem({ url: p.url })));
  let done = 0;
  let duplicates = 0;
  const all = deferred<void>();
  const seen = plan.map((p) => new Uint8Array(p.jobs));
  try {
    for (const [k, p] of plan.entries()) {
      await systems[k]![0]!.reset();
      await systems[k]![0]!.preinsert(0, p.jobs);
      await systems[k]![0]!.vacuum();
    }
    const wal0 = await Promise.all(plan.map((p) => walBytes(p.url)));
    await openWindow(databaseName(first));
    const cpu0 = process.cpuUsage();
    const t0 = nowNs();
    const workers: RunningWorkers[] = [];
    for (const [k, group] of systems.entries()) {
      for (const system of group) {
        workers.push(
          await system.startWorkers({
            concurrency: input.concurrency,
            mode: "drain",
            handler: (i) => {
              if (seen[k]![i] === 1) {
                duplicates++;
                return;
              }
              seen[k]![i] = 1;
              if (++done === input.jobs) all.resolve();
            },
          }),
        );
      }
    }
    await withTimeout(all.promise, 600_000, `${input.variant}: ${input.jobs} jobs`);
    const seconds = msBetween(t0, nowNs()) / 1000;
    const node = process.cpuUsage(cpu0);
    const cpu = await closeWindow();
    for (const w of workers) await w.stop();
    const wal = await Promise.all(plan.map(async (p, k) => Number((await walBytes(p.url)) - wal0[k]!)));
    return {
      variant: input.variant,
      jobsPerSecond: input.jobs / seconds,
      ...perJob(cpu, node, input.jobs),
      walBytesPerJob: wal.map((b, k) => b / plan[k]!.jobs),
      duplicates,
    };
  } finally {
    for (const group of systems) for (const s of group) await s.close();
  }
}

childMain(() => run(childInput<TwoPrimariesInput>()));
