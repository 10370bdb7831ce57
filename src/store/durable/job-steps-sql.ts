/**
 * A job's durable steps as `getJob(id).steps` shows them (src/core/job.ts `JobStep`): read in the same
 * statement as the job, as a JSON array built by a correlated subquery on the step table's key (a job
 * without steps costs one index probe).
 */
import type { Tables } from "../../db/sql.js";
import type { JobStep } from "../../core/job.js";
import { durableTables } from "./durable-tables.js";

/** A step as the subquery returns it (JSON: times as text). */
export interface StepJson {
  name: string;
  kind: JobStep["kind"];
  status: JobStep["status"];
  attempt: number;
  started_at: string;
  finished_at: string | null;
  wake_at: string | null;
  children: string[] | null;
  result: string | null;
  error: string | null;
}

/** How much of a step's result JSON a job read carries. */
export const resultPreviewChars = 200;

/** The subquery: the steps of the job whose id is the SQL expression `id`, oldest first. */
export function stepsSubquery(t: Tables, id: string): string {
  return `coalesce((
    SELECT jsonb_agg(jsonb_build_object(
      'name', s.name, 'kind', s.kind, 'status', s.status, 'attempt', s.attempt,
      'started_at', s.started_at, 'finished_at', s.finished_at, 'wake_at', s.wake_at,
      'children', s.children::text[],
      'result', left(coalesce(s.result -> 'value', s.result)::text, ${resultPreviewChars}),
      'error', s.error ->> 'message') ORDER BY s.started_at, s.name)
    FROM ${durableTables(t).steps} s WHERE s.job_id = ${id}), '[]'::jsonb)`;
}

/** Maps one step of the subquery. */
export function jobStepOf(s: StepJson): JobStep {
  return {
    name: s.name,
    kind: s.kind,
    status: s.status,
    attempt: s.attempt,
    startedAt: new Date(s.started_at),
    finishedAt: s.finished_at === null ? null : new Date(s.finished_at),
    wakeAt: s.wake_at === null ? null : new Date(s.wake_at),
    children: s.children,
    resultPreview: s.status === "succeeded" ? s.result : null,
    error: s.error,
  };
}
