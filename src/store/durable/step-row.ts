/**
 * A recorded step (a row of scheduler_job_step) as the store returns it. Kept apart from the SQL so the
 * pure replay decisions (src/logic/durable-replay.ts) and the readers name one type.
 */

/** What kind of durable call recorded a step. */
export type StepKind = "step" | "sleep" | "signal" | "spawn" | "wait";

/** waiting: a wait not over yet; succeeded: recorded for good; failed: the last run threw. */
export type StepStatus = "waiting" | "succeeded" | "failed";

/** One recorded step of a job. */
export interface StepRecord {
  jobId: string;
  name: string;
  kind: StepKind;
  status: StepStatus;
  /** The attempt that wrote it last. */
  attempt: number;
  startedAt: Date;
  finishedAt: Date | null;
  /** When a waiting sleep is due, or a wait times out (null: none). */
  wakeAt: Date | null;
  /** A spawn's child id, or the ids a wait awaits. */
  children: string[] | null;
  /** The recorded result (JSON), null while waiting or after a failure. */
  result: unknown;
  /** The last failure's `{ name, message }`, when it failed. */
  error: { name: string; message: string } | null;
}

/** The row as pg returns it. */
export interface StepRow {
  job_id: string;
  name: string;
  kind: StepKind;
  status: StepStatus;
  attempt: number;
  started_at: Date;
  finished_at: Date | null;
  wake_at: Date | null;
  children: string[] | null;
  result: unknown;
  error: { name: string; message: string } | null;
}

/** The columns of a {@link StepRow}, for SELECT and RETURNING lists (over `alias`). */
export function stepColumns(alias: string): string {
  const p = `${alias}.`;
  return [
    "job_id",
    "name",
    "kind",
    "status",
    "attempt",
    "started_at",
    "finished_at",
    "wake_at",
    "children::text[] AS children",
    "result",
    "error",
  ]
    .map((c) => p + c)
    .join(", ");
}

/** Maps a row. */
export function stepFromRow(r: StepRow): StepRecord {
  return {
    jobId: r.job_id,
    name: r.name,
    kind: r.kind,
    status: r.status,
    attempt: r.attempt,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    wakeAt: r.wake_at,
    children: r.children,
    result: r.result,
    error: r.error,
  };
}
