/**
 * pg-boss 10 (the newest major that runs on Node 20: pg-boss 11 and later require Node 22) through its
 * public API: `start()`, `createQueue()`, `send()`, `insert()`, `work()`, `fail()`.
 *
 * Settings (the peers table of docs/benchmarks.md): concurrency 10 is ten `work()` workers (pg-boss 10
 * has no per-worker concurrency), each fetching `batchSize: 50` with `pollingIntervalSeconds: 0.5` (the
 * smallest interval pg-boss accepts). A worker runs the jobs of its batch one after another, so at most
 * ten run at once. pg-boss completes a batch when the handler resolves; a job that fails is failed
 * individually with `fail()` first, which makes it a retry, so the batch completion (it only completes
 * `active` rows) leaves it alone.
 *
 * The queue retries with `retryDelay: 1` s, not 0: with 0 the retried row can be fetched by another
 * worker (becoming `active` again) between our `fail()` and pg-boss's own completion of the batch, which
 * would then complete it without running it. One second is pg-boss's smallest safe delay in batch mode.
 */
import pg from "pg";
import type PgBossType from "pg-boss";
import type { BenchSystem, RunningWorkers, SystemContext, WorkerOptions } from "./types.js";

export const PGBOSS_SCHEMA = "bench_pgboss";
const QUEUE = "noop";
export const PGBOSS_WORK_OPTIONS = { batchSize: 50, pollingIntervalSeconds: 0.5 } as const;

export async function createPgBossSystem(ctx: SystemContext): Promise<BenchSystem> {
  const { default: PgBoss } = await import("pg-boss");
  return new PgBossSystem(ctx, PgBoss);
}

class PgBossSystem implements BenchSystem {
  readonly name = "pg-boss" as const;
  readonly pollPeriodMs = PGBOSS_WORK_OPTIONS.pollingIntervalSeconds * 1000;
  readonly supportsPickup = true;
  private readonly admin: pg.Pool;
  private boss: PgBossType | null = null;
  private errors: string[] = [];

  constructor(
    private readonly ctx: SystemContext,
    private readonly PgBoss: typeof PgBossType,
  ) {
    this.admin = new pg.Pool({ connectionString: ctx.url, max: 2 });
  }

  private async started(): Promise<PgBossType> {
    if (!this.boss) {
      const boss = new this.PgBoss({ connectionString: this.ctx.url, schema: PGBOSS_SCHEMA });
      boss.on("error", (e: Error) => {
        if (this.errors.length < 10) this.errors.push(e.message);
      });
      await boss.start();
      await boss.createQueue(QUEUE, { name: QUEUE, retryLimit: 5, retryDelay: 1, retryBackoff: false });
      this.boss = boss;
    }
    return this.boss;
  }

  async reset(): Promise<void> {
    await this.started();
    // job is partitioned by queue: truncating it empties every queue's partition.
    await this.admin.query(`TRUNCATE "${PGBOSS_SCHEMA}".job, "${PGBOSS_SCHEMA}".archive`);
  }

  async preinsert(from: number, n: number): Promise<void> {
    for (let done = 0; done < n; done += 10_000)
      await this.enqueueBulk(from + done, Math.min(10_000, n - done));
  }

  async vacuum(): Promise<void> {
    await this.admin.query(`VACUUM ANALYZE "${PGBOSS_SCHEMA}".job`);
  }

  async startWorkers(options: WorkerOptions): Promise<RunningWorkers> {
    const boss = await this.started();
    const handler = options.handler;
    const ids: string[] = [];
    for (let w = 0; w < options.concurrency; w++) {
      ids.push(
        await boss.work<{ i: number }>(QUEUE, PGBOSS_WORK_OPTIONS, async (jobs) => {
          let failed: string[] | undefined;
          for (const job of jobs) {
            try {
              handler(job.data.i);
            } catch {
              (failed ??= []).push(job.id);
            }
          }
          if (failed) await boss.fail(QUEUE, failed);
        }),
      );
    }
    return {
      stop: async () => {
        for (const id of ids) await boss.offWork({ id });
        return this.errors.length ? { errors: this.errors } : undefined;
      },
    };
  }

  async remaining(): Promise<number> {
    const { rows } = await this.admin.query<{ n: string }>(
      `SELECT count(*) AS n FROM "${PGBOSS_SCHEMA}".job WHERE name = $1 AND state <> 'completed'`,
      [QUEUE],
    );
    return Number(rows[0]!.n);
  }

  async enqueueOne(i: number): Promise<void> {
    await (await this.started()).send(QUEUE, { i });
  }

  async enqueueBulk(from: number, n: number): Promise<void> {
    const jobs = new Array<{ name: string; data: { i: number } }>(n);
    for (let k = 0; k < n; k++) jobs[k] = { name: QUEUE, data: { i: from + k } };
    await (await this.started()).insert(jobs);
  }

  async close(): Promise<void> {
    await this.boss?.stop({ graceful: true, wait: true, timeout: 5000 });
    await this.admin.end();
  }
}
