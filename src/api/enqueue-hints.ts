/**
 * When an enqueue wakes the other nodes. The reference's triggers: critical priority, or a single job
 * enqueued to run now (a user waiting on it). Batches of ordinary jobs and delayed jobs wait for polling:
 * a wakeup for them would cost every node a poll and gain nothing. One rule for both moments it is
 * applied: before the insert (to fold the notify into it) and after (to publish it separately).
 */
import type { FoldedNotify, WakeupHint } from "../../coordinators/spi.js";
import { encodeHint } from "../../coordinators/hint-codec.js";
import { postgresChannelName } from "../../coordinators/postgres/postgres-config.js";
import type { NewJob } from "../input/enqueue-input.js";
import { priorities } from "../input/priority.js";

/** How far ahead a job still counts as due now (ms): covers the clock gap between node and database. */
const dueSlackMs = 5;

/** What the rule looks at in a job. */
export interface HintJob {
  type: string;
  priority: number;
  /** Whether it runs now (no delay). */
  due: boolean;
  /** Whether it carries a concurrency key; absent: not known (an announced row), treated as keyed. */
  keyed?: boolean;
}

/** The hint an enqueue of `jobs` publishes, or null when it should not wake anyone. */
export function urgentHint(jobs: readonly HintJob[], source: string): WakeupHint | null {
  if (jobs.length === 0) return null;
  let priority = -Infinity;
  let critical = false;
  let target: string | undefined = jobs[0]!.type;
  let unkeyed = true;
  for (const j of jobs) {
    if (j.priority > priority) priority = j.priority;
    if (j.priority >= priorities.critical) critical = true;
    if (j.type !== target) target = undefined;
    if (j.keyed !== false) unkeyed = false;
  }
  if (!critical && !(jobs.length === 1 && jobs[0]!.due)) return null;
  const hint: WakeupHint = { priority, source };
  if (target !== undefined) hint.target = target;
  if (unkeyed) hint.unkeyed = true;
  return hint;
}

/** A job about to be inserted, as the rule sees it (`now` in ms since the epoch, local clock). */
export function hintJobOfNew(job: NewJob, now: number): HintJob {
  const due = job.runAt === null ? job.delayMs <= dueSlackMs : job.runAt.getTime() <= now + dueSlackMs;
  return { type: job.type, priority: job.priority, due, keyed: job.concurrencyKey != null };
}

/**
 * An inserted job, as the rule sees it. A row does not say whether it carries a concurrency key: `keyed`
 * is what the caller knows of the batch (absent: not known).
 */
export function hintJobOfRow(
  job: { type: string; priority: number; scheduledTime: Date },
  now: number,
  keyed?: boolean,
): HintJob {
  const due = job.scheduledTime.getTime() <= now + dueSlackMs;
  return keyed === undefined
    ? { type: job.type, priority: job.priority, due }
    : { type: job.type, priority: job.priority, due, keyed };
}

/**
 * The wakeup a bare client (no node, so no coordinator of its own: a web process) folds into its insert,
 * so the nodes LISTENing on its database hear of urgent work as it commits, as they do of the SQL
 * function's (migrations/0007_sql_enqueue.sql): `pg_notify` on the schema's wakeup channel. Only when its
 * configuration says the nodes LISTEN on this database: `auto` (the default) or `postgres` without a URL
 * of its own. Nothing otherwise, and nothing for a job that would not wake anyone (see {@link urgentHint}).
 *
 * @example
 * ```ts
 * bareClientWakeup("auto", "pawl", [job], "web-1", Date.now()); // { channel: "pawl_pawl_wakeup", payload: "{...}" }
 * ```
 */
export function bareClientWakeup(
  coordinator: unknown,
  schema: string,
  jobs: readonly NewJob[],
  source: string,
  now: number,
): FoldedNotify | undefined {
  if (typeof coordinator !== "string" || !/^\s*(auto|postgres|postgresql)\s*$/i.test(coordinator))
    return undefined;
  const hint = urgentHint(
    jobs.map((j) => hintJobOfNew(j, now)),
    source,
  );
  const payload = hint ? encodeHint(hint) : null;
  return payload === null ? undefined : { channel: postgresChannelName(schema), payload };
}
