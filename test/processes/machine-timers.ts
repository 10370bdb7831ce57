/**
 * The timer check of the durable-machine process tests (issue 42's acceptance: `after` timers fire within
 * 1 s of their due time across a node kill or a PostgreSQL restart): waits until the machines park on
 * their timers, reads the due times they saved, lets the test disrupt the cluster, waits until every
 * machine ended, and measures how late each timer fired.
 */
import type pg from "pg";
import { until } from "./harness.js";

/** How late the timers fired (ms, finish time minus saved due time), earliest first. */
export interface TimerLateness {
  late: number[];
  min: number;
  max: number;
}

/**
 * Runs `disrupt` while the machine jobs `ids` are parked on their first `after` timer, and measures their
 * lateness once they all SUCCEEDED. A query that fails while the database restarts counts as not yet.
 *
 * @throws when they do not all park within 20 s or end within `endMs`, or a due time is missing.
 */
export async function timerLateness(
  pool: pg.Pool,
  schema: string,
  ids: readonly string[],
  disrupt: () => Promise<void> | void,
  endMs = 30_000,
): Promise<TimerLateness> {
  const s = `"${schema}"`;
  const count = async (table: string, status: string) => {
    const { rows } = await pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${s}.${table} WHERE id = ANY($1::bigint[]) AND status = $2`,
      [ids, status],
    );
    return rows[0]!.n === ids.length;
  };
  await until(() => count("scheduler_job_queue", "WAITING"), 20_000, "the timers parked");
  // The due times, saved with the parked snapshots (epoch ms of the node's clock).
  const due = await pool.query<{ job_id: string; due: number }>(
    `SELECT job_id, (timers->0->>'dueAt')::float8 AS due FROM ${s}.scheduler_machine WHERE job_id = ANY($1::bigint[])`,
    [ids],
  );
  if (due.rows.length !== ids.length) {
    throw new Error(`${due.rows.length} due times saved for ${ids.length} parked machines`);
  }
  await disrupt();
  await until(() => count("scheduler_job_all", "SUCCEEDED"), endMs, "the timers fired");
  const ended = await pool.query<{ id: string; at: number }>(
    `SELECT id, extract(epoch FROM finished_at)::float8 * 1000 AS at FROM ${s}.scheduler_job_all WHERE id = ANY($1::bigint[])`,
    [ids],
  );
  const dueOf = new Map(due.rows.map((r) => [r.job_id, r.due]));
  const late = ended.rows.map((r) => r.at - dueOf.get(r.id)!).sort((a, b) => a - b);
  return { late, min: late[0]!, max: late.at(-1)! };
}
