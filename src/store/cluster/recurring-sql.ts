/**
 * scheduler_recurring: one row per recurring schedule (pawl.schedule). The scheduler claims due rows with
 * FOR UPDATE SKIP LOCKED inside a transaction, enqueues each fire's child in the same transaction and
 * advances `next_fire_at` before committing, so a fire is enqueued exactly once however many nodes check.
 */
import type { MissedFirePolicy } from "../../logic/cron.js";
import { named, type Queryable, type Tables } from "../../db/sql.js";

/** A recurring schedule as stored. */
export interface RecurringRow {
  name: string;
  cron: string;
  timezone: string;
  type: string;
  payload: unknown;
  /** The children's priority, or null for the job type's default. */
  priority: number | null;
  missedFirePolicy: MissedFirePolicy;
  /** The concurrency key every child carries (migration 0014), or null for none. */
  concurrencyKey: string | null;
  /** The limit the schedule states for its key, or null for the children's type default, else none. */
  concurrencyLimit: number | null;
  nextFireAt: Date;
  lastFiredAt: Date | null;
  enabled: boolean;
  createdAt: Date;
  updatedAt: Date;
}

/**
 * What {@link upsertRecurring} writes: a schedule's own fields, with the payload as JSON text and
 * `nextFireAt` the first fire, used when the row is new or its cron or time zone changed.
 */
export interface NewRecurring extends Pick<
  RecurringRow,
  | "name"
  | "cron"
  | "timezone"
  | "type"
  | "priority"
  | "missedFirePolicy"
  | "concurrencyKey"
  | "concurrencyLimit"
  | "nextFireAt"
> {
  payloadJson: string;
}

/** The qualified table name. */
export function recurringTable(t: Tables): string {
  return `${t.s}.scheduler_recurring`;
}

/**
 * The columns as {@link RecurringRow} names them, so a row needs no mapping (pg returns timestamptz as
 * Date). Every read of schedules selects this list (the console's page too), so a new column reaches them all.
 */
export const recurringColumns =
  'name, cron, timezone, type, payload, priority, missed_fire_policy AS "missedFirePolicy", ' +
  'concurrency_key AS "concurrencyKey", concurrency_limit AS "concurrencyLimit", ' +
  'next_fire_at AS "nextFireAt", last_fired_at AS "lastFiredAt", enabled, created_at AS "createdAt", ' +
  'updated_at AS "updatedAt"';

/**
 * Creates or updates a schedule. Re-registering the same cron and time zone (every node does it at boot)
 * keeps the row's `next_fire_at`, so restarts neither skip nor repeat a fire; a changed cron or time zone
 * takes `nextFireAt`.
 */
export async function upsertRecurring(db: Queryable, t: Tables, r: NewRecurring): Promise<RecurringRow> {
  const table = recurringTable(t);
  const res = await db.query<RecurringRow>(
    named(
      t,
      "recurring_upsert",
      `INSERT INTO ${table} AS r (name, cron, timezone, type, payload, priority, missed_fire_policy, next_fire_at,
                                  concurrency_key, concurrency_limit)
       VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $8, $9, $10)
       ON CONFLICT (name) DO UPDATE SET
         next_fire_at = CASE WHEN r.cron = EXCLUDED.cron AND r.timezone = EXCLUDED.timezone AND r.enabled
                             THEN r.next_fire_at ELSE EXCLUDED.next_fire_at END,
         cron = EXCLUDED.cron, timezone = EXCLUDED.timezone, type = EXCLUDED.type, payload = EXCLUDED.payload,
         priority = EXCLUDED.priority, missed_fire_policy = EXCLUDED.missed_fire_policy,
         concurrency_key = EXCLUDED.concurrency_key, concurrency_limit = EXCLUDED.concurrency_limit, enabled = true,
         updated_at = now()
       RETURNING ${recurringColumns}`,
    )([
      r.name,
      r.cron,
      r.timezone,
      r.type,
      r.payloadJson,
      r.priority,
      r.missedFirePolicy,
      r.nextFireAt,
      r.concurrencyKey,
      r.concurrencyLimit,
    ]),
  );
  return res.rows[0] as RecurringRow;
}

/** Deletes a schedule; returns whether it existed. Children already enqueued are left alone. */
export async function deleteRecurring(db: Queryable, t: Tables, name: string): Promise<boolean> {
  const res = await db.query(
    named(t, "recurring_delete", `DELETE FROM ${recurringTable(t)} WHERE name = $1`)([name]),
  );
  return (res.rowCount ?? 0) > 0;
}

/** Every schedule, by name. */
export async function listRecurring(db: Queryable, t: Tables): Promise<RecurringRow[]> {
  const res = await db.query<RecurringRow>(
    named(t, "recurring_list", `SELECT ${recurringColumns} FROM ${recurringTable(t)} ORDER BY name`)([]),
  );
  return res.rows;
}

/**
 * Locks up to `limit` due schedules (FOR UPDATE SKIP LOCKED: rows another node is firing are skipped)
 * and reads the database's time. Run inside a transaction; the locks last until it ends.
 */
export async function claimDueRecurring(
  db: Queryable,
  t: Tables,
  limit: number,
  now: Date | null = null,
): Promise<{ rows: RecurringRow[]; databaseTime: Date }> {
  const table = recurringTable(t);
  const clock = await db.query<{ now: Date }>(
    named(t, "recurring_now", "SELECT coalesce($1::timestamptz, now()) AS now")([now]),
  );
  const databaseTime = (clock.rows[0] as { now: Date }).now;
  const res = await db.query<RecurringRow>(
    named(
      t,
      "recurring_claim",
      `SELECT ${recurringColumns} FROM ${table}
       WHERE enabled AND next_fire_at <= $2::timestamptz
       ORDER BY next_fire_at, name
       LIMIT $1
       FOR UPDATE SKIP LOCKED`,
    )([limit, databaseTime]),
  );
  return { rows: res.rows, databaseTime };
}

/** Moves a claimed schedule to its next fire, recording the fire that was enqueued (if any). */
export async function advanceRecurring(
  db: Queryable,
  t: Tables,
  name: string,
  nextFireAt: Date,
  firedAt: Date | null,
): Promise<void> {
  await db.query(
    named(
      t,
      "recurring_advance",
      `UPDATE ${recurringTable(t)}
       SET next_fire_at = $2, last_fired_at = coalesce($3::timestamptz, last_fired_at), updated_at = now()
       WHERE name = $1`,
    )([name, nextFireAt, firedAt]),
  );
}

/** Milliseconds from the database's now to the earliest enabled fire (negative when overdue); null if none. */
export async function msUntilNextFire(
  db: Queryable,
  t: Tables,
  now: Date | null = null,
): Promise<number | null> {
  const res = await db.query<{ ms: number | null }>(
    named(
      t,
      "recurring_next",
      `SELECT (extract(epoch FROM min(next_fire_at) - coalesce($1::timestamptz, now())) * 1000)::float8 AS ms
       FROM ${recurringTable(t)} WHERE enabled`,
    )([now]),
  );
  const ms = res.rows[0]?.ms;
  return ms === null || ms === undefined ? null : Math.round(ms);
}

/** Turns a schedule off (its cron no longer computes, say); schedule() again turns it back on. */
export async function disableRecurring(db: Queryable, t: Tables, name: string): Promise<void> {
  await db.query(
    named(
      t,
      "recurring_disable",
      `UPDATE ${recurringTable(t)} SET enabled = false, updated_at = now() WHERE name = $1`,
    )([name]),
  );
}
