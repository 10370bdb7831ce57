/**
 * pawl, as users run it: the compiled build (`npm run bench` builds first), createPawl with its defaults
 * except `concurrency`, a silent logger (the default).
 */
import pg from "pg";
import { createPawl, type Pawl } from "../../../dist/src/index.js";
import {
  benchHandler,
  benchPawlTracing,
  benchTraceContextSql,
  benchTracing,
  flushBenchTracing,
  registerBenchTracing,
} from "../lib/bench-tracing.js";
import type { BenchSystem, RunningWorkers, SystemContext, WorkerOptions } from "./types.js";
import { PlannedFailure } from "./types.js";

/** The schema of pawl's bench tables. */
export const PAWL_SCHEMA = "bench_pawl";

/** Inserts `n` runnable no-op jobs numbered from `from`, with one statement per 10,000 rows. */
export async function insertPawlJobs(
  db: pg.Pool,
  schema: string,
  from: number,
  n: number,
  type = "noop",
): Promise<void> {
  for (let done = 0; done < n; done += 10_000) {
    const count = Math.min(10_000, n - done);
    await db.query(
      `INSERT INTO "${schema}".scheduler_job_queue (type, payload, scheduled_time, trace_context)
       SELECT $1, jsonb_build_object('i', g), now() - interval '1 second', ${benchTraceContextSql}
       FROM generate_series($2::int, $3::int) g`,
      [type, from + done, from + done + count - 1],
    );
  }
}

/** Creates (migrates) and empties pawl's tables in `schema`. */
export async function resetPawlSchema(url: string, schema: string, admin: pg.Pool): Promise<void> {
  const setup = createPawl({ connectionString: url, schema });
  await setup.migrate();
  await setup.close();
  await admin.query(
    `TRUNCATE "${schema}".scheduler_job_queue, "${schema}".scheduler_job_finished, "${schema}".scheduler_resource_permit`,
  );
}

export class PawlSystem implements BenchSystem {
  readonly name = "pawl" as const;
  readonly pollPeriodMs = 0;
  readonly supportsPickup = true;
  private readonly admin: pg.Pool;
  private client: Pawl | null = null;
  private node: Pawl | null = null;

  constructor(private readonly ctx: SystemContext) {
    this.admin = new pg.Pool({ connectionString: ctx.url, max: 2 });
  }

  async reset(): Promise<void> {
    await resetPawlSchema(this.ctx.url, PAWL_SCHEMA, this.admin);
  }

  preinsert(from: number, n: number): Promise<void> {
    return insertPawlJobs(this.admin, PAWL_SCHEMA, from, n);
  }

  async vacuum(): Promise<void> {
    await this.admin.query(`VACUUM ANALYZE "${PAWL_SCHEMA}".scheduler_job_queue`);
  }

  async startWorkers(options: WorkerOptions): Promise<RunningWorkers> {
    // --tracing on: the SDK is registered before the node starts, so its attempts are traced.
    registerBenchTracing();
    // Drains run with pawl's defaults. The latency mode sets a 30 s poll interval so that only the
    // wakeup (here: the local one, same process) can explain a fast pickup.
    const node = createPawl({
      connectionString: this.ctx.url,
      schema: PAWL_SCHEMA,
      concurrency: options.concurrency,
      ...(options.mode === "latency" ? { pollIntervalMs: 30_000 } : {}),
      // PAWL_BENCH_KEEP_SUCCEEDED=false measures the mode that deletes succeeded rows (issue 16).
      ...(process.env.PAWL_BENCH_KEEP_SUCCEEDED === "false" ? { keepSucceeded: false } : {}),
      // --tracing sdk-span: the SDK is registered but pawl does not trace (lib/bench-tracing.ts).
      ...(benchPawlTracing ? {} : { tracing: false }),
    });
    const handler = benchHandler(options.handler);
    // A retry is due at once (baseMs 0), the fastest pawl can be told to retry: the mixed workload times
    // the failure path, not a backoff.
    node.register("noop", (payload: { i: number }) => handler(payload.i), {
      retry: { baseMs: 0, jitter: 0 },
    });
    const diag = {
      claims: 0,
      claimed: 0,
      claimMsTotal: 0,
      claimMsMax: 0,
      polls: 0,
      emptyPolls: 0,
      errors: [] as string[],
    };
    node.on("claim", (e) => {
      diag.claims++;
      diag.claimed += e.jobs.length;
      diag.claimMsTotal += e.durationMs;
      diag.claimMsMax = Math.max(diag.claimMsMax, e.durationMs);
    });
    node.on("poll", (e) => {
      diag.polls++;
      if (e.claimed === 0) diag.emptyPolls++;
    });
    node.on("error", (e) => {
      if (diag.errors.length < 10) diag.errors.push(`${e.where}: ${e.error.message}`);
    });
    node.on("job:retried", (e) => {
      if (
        !(e.error.name === "PlannedFailure" || e.error instanceof PlannedFailure) &&
        diag.errors.length < 10
      ) {
        diag.errors.push(`retried: ${e.error.message}`);
      }
    });
    await node.start();
    this.node = node;
    return {
      stop: async () => {
        await node.close();
        this.node = null;
        const spans = benchTracing ? await flushBenchTracing() : undefined;
        return {
          ...(spans === undefined ? {} : { spansExported: spans }),
          claims: diag.claims,
          jobsPerClaim: diag.claims ? Math.round(diag.claimed / diag.claims) : 0,
          claimMsMean: diag.claims ? +(diag.claimMsTotal / diag.claims).toFixed(2) : 0,
          claimMsMax: +diag.claimMsMax.toFixed(2),
          polls: diag.polls,
          emptyPolls: diag.emptyPolls,
          ...(diag.errors.length ? { errors: diag.errors } : {}),
        };
      },
    };
  }

  async remaining(): Promise<number> {
    const { rows } = await this.admin.query<{ n: string }>(
      `SELECT count(*) AS n FROM "${PAWL_SCHEMA}".scheduler_job_queue WHERE status <> 'SUCCEEDED'`,
    );
    return Number(rows[0]!.n);
  }

  private enqueuer(): Pawl {
    // While a node runs (the pickup workload), enqueue through it: the local submission path.
    if (this.node) return this.node;
    this.client ??= createPawl({ connectionString: this.ctx.url, schema: PAWL_SCHEMA });
    return this.client;
  }

  async enqueueOne(i: number): Promise<void> {
    await this.enqueuer().enqueue("noop", { i });
  }

  async enqueueBulk(from: number, n: number): Promise<void> {
    const items = new Array<{ type: string; payload: { i: number } }>(n);
    for (let k = 0; k < n; k++) items[k] = { type: "noop", payload: { i: from + k } };
    await this.enqueuer().enqueueMany(items);
  }

  async close(): Promise<void> {
    await this.node?.close();
    await this.client?.close();
    await this.admin.end();
  }
}
