/**
 * graphile-worker through its public API: `run()` with a task list, `makeWorkerUtils()` for enqueue
 * (`addJob`, `addJobs`), `runMigrations()` for the schema.
 *
 * Two modes, as the issue asks:
 * - tuned: the settings of graphile-worker's own perfTest (perfTest/graphile.config.js):
 *   `localQueue: { size: 500, refetchDelay: { durationMs: 10 } }`, `completeJobBatchDelay: 0`,
 *   `failJobBatchDelay: 0`, `maxPoolSize: concurrency + 1`;
 * - defaults: only `concurrency`, schema and connection set (localQueue off, completion one by one).
 *
 * Both run with a silent logger and `NO_LOG_SUCCESS=1` (as the perfTest does): otherwise graphile-worker
 * logs one line per completed job, and the bench would time console output.
 */
import pg from "pg";
import type * as GraphileWorker from "graphile-worker";
import type { Runner, WorkerUtils } from "graphile-worker";
import type { BenchSystem, RunningWorkers, SystemContext, WorkerOptions } from "./types.js";
import { PlannedFailure } from "./types.js";

export const GRAPHILE_SCHEMA = "bench_graphile";

/** The tuned preset: graphile-worker's perfTest settings (concurrency is ours: 10). */
export function tunedPreset(concurrency: number) {
  return {
    worker: {
      maxPoolSize: concurrency + 1,
      localQueue: { size: 500, refetchDelay: { durationMs: 10 } },
      completeJobBatchDelay: 0,
      failJobBatchDelay: 0,
    },
  };
}

type GraphileModule = typeof GraphileWorker;

export async function createGraphileSystem(ctx: SystemContext, tuned: boolean): Promise<BenchSystem> {
  // Read by graphile-worker when its modules load: set it before importing.
  process.env.NO_LOG_SUCCESS ??= "1";
  const gw = await import("graphile-worker");
  return new GraphileSystem(ctx, tuned, gw);
}

class GraphileSystem implements BenchSystem {
  readonly name;
  readonly pollPeriodMs = 0;
  readonly supportsPickup = true;
  private readonly admin: pg.Pool;
  private readonly logger;
  private utils: WorkerUtils | null = null;
  private migrated = false;

  constructor(
    private readonly ctx: SystemContext,
    private readonly tuned: boolean,
    private readonly gw: GraphileModule,
  ) {
    this.name = tuned ? ("graphile-tuned" as const) : ("graphile-defaults" as const);
    this.admin = new pg.Pool({ connectionString: ctx.url, max: 2 });
    this.logger = new gw.Logger(() => () => {});
  }

  private async workerUtils(): Promise<WorkerUtils> {
    this.utils ??= await this.gw.makeWorkerUtils({
      connectionString: this.ctx.url,
      schema: GRAPHILE_SCHEMA,
      logger: this.logger,
    });
    return this.utils;
  }

  async reset(): Promise<void> {
    if (!this.migrated) {
      await this.gw.runMigrations({
        connectionString: this.ctx.url,
        schema: GRAPHILE_SCHEMA,
        logger: this.logger,
      });
      this.migrated = true;
    }
    await this.admin.query(
      `TRUNCATE "${GRAPHILE_SCHEMA}"._private_jobs, "${GRAPHILE_SCHEMA}"._private_job_queues`,
    );
  }

  async preinsert(from: number, n: number): Promise<void> {
    const utils = await this.workerUtils();
    for (let done = 0; done < n; done += 10_000) {
      const count = Math.min(10_000, n - done);
      const specs = new Array<{ identifier: string; payload: { i: number } }>(count);
      for (let k = 0; k < count; k++) specs[k] = { identifier: "noop", payload: { i: from + done + k } };
      await utils.addJobs(specs);
    }
  }

  async vacuum(): Promise<void> {
    await this.admin.query(`VACUUM ANALYZE "${GRAPHILE_SCHEMA}"._private_jobs`);
  }

  async startWorkers(options: WorkerOptions): Promise<RunningWorkers> {
    const handler = options.handler;
    let errors = 0;
    const runner: Runner = await this.gw.run({
      connectionString: this.ctx.url,
      schema: GRAPHILE_SCHEMA,
      concurrency: options.concurrency,
      noHandleSignals: true,
      logger: this.logger,
      taskList: {
        noop: async (payload) => handler((payload as { i: number }).i),
      },
      ...(this.tuned ? { preset: tunedPreset(options.concurrency) } : {}),
    });
    runner.events.on("job:error", ({ error }) => {
      if (!(error instanceof PlannedFailure)) errors++;
    });
    return {
      stop: async () => {
        await runner.stop();
        return errors ? { errors } : undefined;
      },
    };
  }

  async remaining(): Promise<number> {
    // Completed jobs are deleted; failed ones waiting for their retry stay.
    const { rows } = await this.admin.query<{ n: string }>(
      `SELECT count(*) AS n FROM "${GRAPHILE_SCHEMA}"._private_jobs`,
    );
    return Number(rows[0]!.n);
  }

  async enqueueOne(i: number): Promise<void> {
    await (await this.workerUtils()).addJob("noop", { i });
  }

  async enqueueBulk(from: number, n: number): Promise<void> {
    const specs = new Array<{ identifier: string; payload: { i: number } }>(n);
    for (let k = 0; k < n; k++) specs[k] = { identifier: "noop", payload: { i: from + k } };
    await (await this.workerUtils()).addJobs(specs);
  }

  async close(): Promise<void> {
    await this.utils?.release();
    await this.admin.end();
  }
}
