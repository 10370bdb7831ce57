/**
 * The SQL floor: what plain `pg` does with no runtime at all. Two connections, each in a loop: claim up
 * to 500 due rows in one statement (`FOR UPDATE SKIP LOCKED`), run them in-process (no-op handlers, ten
 * at a time across both loops), then one UPDATE completes the batch (and one more puts failed rows back,
 * due at once). No retries policy, no timeouts, no events, no wakeups: the cost of the two statements per
 * 500 jobs and of the rows themselves. A job runtime cannot beat this on the same database.
 */
import pg from "pg";
import { sleep } from "../lib/common.js";
import type { BenchSystem, RunningWorkers, SystemContext, WorkerOptions } from "./types.js";

export const FLOOR_SCHEMA = "bench_floor";
const T = `"${FLOOR_SCHEMA}".jobs`;
export const FLOOR_BATCH = 500;
export const FLOOR_CONNECTIONS = 2;

const CLAIM = `
  UPDATE ${T} SET status = 'running', attempts = attempts + 1, locked_at = now()
  WHERE id IN (
    SELECT id FROM ${T}
    WHERE status = 'pending' AND run_at <= now()
    ORDER BY run_at, id
    LIMIT ${FLOOR_BATCH}
    FOR UPDATE SKIP LOCKED
  )
  RETURNING id, payload`;

export class FloorSystem implements BenchSystem {
  readonly name = "floor" as const;
  readonly pollPeriodMs = 0;
  readonly supportsPickup = false;
  private readonly admin: pg.Pool;
  private created = false;

  constructor(private readonly ctx: SystemContext) {
    this.admin = new pg.Pool({ connectionString: ctx.url, max: 2 });
  }

  async reset(): Promise<void> {
    if (!this.created) {
      await this.admin.query(`CREATE SCHEMA IF NOT EXISTS "${FLOOR_SCHEMA}"`);
      await this.admin.query(`
        CREATE TABLE IF NOT EXISTS ${T} (
          id         bigserial PRIMARY KEY,
          payload    jsonb NOT NULL,
          status     text NOT NULL DEFAULT 'pending',
          run_at     timestamptz NOT NULL DEFAULT now(),
          attempts   integer NOT NULL DEFAULT 0,
          locked_at  timestamptz
        )`);
      await this.admin.query(
        `CREATE INDEX IF NOT EXISTS jobs_pending_idx ON ${T} (run_at, id) WHERE status = 'pending'`,
      );
      this.created = true;
    }
    await this.admin.query(`TRUNCATE ${T} RESTART IDENTITY`);
  }

  async preinsert(from: number, n: number): Promise<void> {
    for (let done = 0; done < n; done += 10_000) {
      const count = Math.min(10_000, n - done);
      await this.admin.query(
        `INSERT INTO ${T} (payload, run_at)
         SELECT jsonb_build_object('i', g), now() - interval '1 second' FROM generate_series($1::int, $2::int) g`,
        [from + done, from + done + count - 1],
      );
    }
  }

  async vacuum(): Promise<void> {
    await this.admin.query(`VACUUM ANALYZE ${T}`);
  }

  async startWorkers(options: WorkerOptions): Promise<RunningWorkers> {
    const handler = options.handler;
    let stopping = false;
    let inFlight = 0;
    const waiters: (() => void)[] = [];
    const acquire = async () => {
      while (inFlight >= options.concurrency) await new Promise<void>((r) => waiters.push(r));
      inFlight++;
    };
    const release = () => {
      inFlight--;
      waiters.shift()?.();
    };
    const clients: pg.Client[] = [];
    const loop = async (client: pg.Client) => {
      while (!stopping) {
        const { rows } = await client.query<{ id: string; payload: { i: number } }>(CLAIM);
        if (rows.length === 0) {
          await sleep(5);
          continue;
        }
        const done: string[] = [];
        const failed: string[] = [];
        // Run the batch with at most `concurrency` handlers in flight across both loops.
        await Promise.all(
          rows.map(async (row) => {
            await acquire();
            try {
              handler(row.payload.i);
              done.push(row.id);
            } catch {
              failed.push(row.id);
            } finally {
              release();
            }
          }),
        );
        await client.query(`UPDATE ${T} SET status = 'done' WHERE id = ANY($1::bigint[])`, [done]);
        if (failed.length) {
          await client.query(
            `UPDATE ${T} SET status = 'pending', run_at = now() WHERE id = ANY($1::bigint[])`,
            [failed],
          );
        }
      }
    };
    const loops: Promise<void>[] = [];
    for (let c = 0; c < FLOOR_CONNECTIONS; c++) {
      const client = new pg.Client({ connectionString: this.ctx.url });
      await client.connect();
      clients.push(client);
      loops.push(loop(client));
    }
    return {
      stop: async () => {
        stopping = true;
        await Promise.all(loops);
        await Promise.all(clients.map((c) => c.end()));
        return undefined;
      },
    };
  }

  async remaining(): Promise<number> {
    const { rows } = await this.admin.query<{ n: string }>(
      `SELECT count(*) AS n FROM ${T} WHERE status <> 'done'`,
    );
    return Number(rows[0]!.n);
  }

  async enqueueOne(i: number): Promise<void> {
    await this.admin.query(`INSERT INTO ${T} (payload) VALUES ($1)`, [JSON.stringify({ i })]);
  }

  async enqueueBulk(from: number, n: number): Promise<void> {
    const payloads = new Array<string>(n);
    for (let k = 0; k < n; k++) payloads[k] = JSON.stringify({ i: from + k });
    await this.admin.query(`INSERT INTO ${T} (payload) SELECT unnest($1::jsonb[])`, [payloads]);
  }

  async close(): Promise<void> {
    await this.admin.end();
  }
}
