/**
 * `npm run bench -- --goals`: issue 28's goals in one bench run. It runs the bench's own workloads one
 * after another, each as `main.ts` in a child process with `--json-out` (their tables print as they go):
 *
 * 1. the drain beside graphile-worker tuned and the SQL floor, finished rows kept;
 * 2. the same with `--keep-succeeded false`;
 * 3. two-process pickup with the postgres, amqp and Hazelcast coordinators;
 * 4. the curves that carry goals: the due backlog, finished rows, the load axis and the idle cost.
 *
 * and then prints the goal table (lib/goal-table.ts). `--skip curves,latency` leaves parts out; a part
 * that fails reads "not measured" in the table, and the run goes on with the next.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { goalRows, renderGoals, type GoalInputs } from "./lib/goal-table.js";

/** Options of {@link runGoals}, from main.ts's flags. */
export interface GoalsOptions {
  /** Drain sizes, as `--jobs` takes them. */
  jobs: string;
  /** Runs per drain point (median). */
  runs: number;
  /** Runs per curve point (median). */
  curveRuns: number;
  /** Parts to leave out: `curves`, `latency`, `drain`. */
  skip: readonly string[];
  /** Passed through to every part (`--database-url`). */
  databaseUrl?: string;
  /** Where the goal rows and every part's results go as JSON, if anywhere. */
  jsonOut?: string;
}

/** One part of a goals run: the flags it passes to main.ts, and what of main.ts's JSON the goals read. */
interface Part {
  name: keyof GoalInputs;
  skipAs: string;
  args: string[];
  read: (json: Record<string, unknown>) => unknown;
}

/** The parts of a goals run, in order. */
function parts(o: GoalsOptions): Part[] {
  const drain = [
    "--systems",
    "pawl,graphile-tuned,floor",
    "--drain",
    "--jobs",
    o.jobs,
    "--runs",
    String(o.runs),
  ];
  // The drains' JSON holds every workload's results; the goals read the drain's.
  const drainOf = (json: Record<string, unknown>) => json.drain;
  return [
    // Both modes explicit: the children inherit PAWL_BENCH_KEEP_SUCCEEDED from this environment.
    { name: "kept", skipAs: "drain", args: [...drain, "--keep-succeeded", "true"], read: drainOf },
    { name: "notKept", skipAs: "drain", args: [...drain, "--keep-succeeded", "false"], read: drainOf },
    {
      name: "latency",
      skipAs: "latency",
      args: ["--latency", "--coordinator", "postgres,amqp,hazelcast"],
      read: (json) => json.coordinatorLatency,
    },
    {
      name: "curves",
      skipAs: "curves",
      args: ["--curves", "--axes", "backlog,finished,load,idle", "--runs", String(o.curveRuns)],
      read: (json) => json,
    },
  ];
}

/** Runs main.ts with `args` in a child (its output on ours) and resolves with what it wrote to `--json-out`. */
function runPart(args: string[], jsonFile: string): Promise<unknown> {
  const main = fileURLToPath(new URL("./main.ts", import.meta.url));
  return new Promise((resolve, reject) => {
    // execArgv carries tsx's loader: the child runs TypeScript as this process does.
    const child = spawn(process.execPath, [...process.execArgv, main, ...args, "--json-out", jsonFile], {
      stdio: ["ignore", "inherit", "inherit"],
    });
    child.on("error", reject);
    child.on("exit", (code, signal) => {
      if (code !== 0) reject(new Error(`main.ts ${args.join(" ")} exited (${signal ?? `code ${code}`})`));
      else {
        try {
          resolve(JSON.parse(readFileSync(jsonFile, "utf8")));
        } catch (error) {
          reject(error as Error);
        }
      }
    });
  });
}

/** Runs every part not skipped, prints the goal table, and returns the inputs it judged. */
export async function runGoals(o: GoalsOptions): Promise<GoalInputs> {
  const dir = mkdtempSync(join(tmpdir(), "pawl-goals-"));
  const inputs: GoalInputs = {};
  const failed: string[] = [];
  try {
    for (const part of parts(o)) {
      if (o.skip.includes(part.skipAs)) continue;
      process.stderr.write(`\ngoals: ${part.name} (main.ts ${part.args.join(" ")})\n`);
      const args = o.databaseUrl ? [...part.args, "--database-url", o.databaseUrl] : part.args;
      try {
        const json = (await runPart(args, join(dir, `${part.name}.json`))) as Record<string, unknown>;
        Object.assign(inputs, { [part.name]: part.read(json) });
      } catch (error) {
        failed.push(`${part.name}: ${(error as Error).message.split("\n")[0]}`);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const rows = goalRows(inputs);
  console.log("\nIssue 28's goals, this run");
  console.log(renderGoals(rows));
  if (failed.length) console.log(`parts that failed (not measured): ${failed.join("; ")}`);
  if (o.jsonOut) writeFileSync(o.jsonOut, JSON.stringify({ rows, inputs, failed }, null, 2));
  return inputs;
}
