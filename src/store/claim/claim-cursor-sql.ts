/**
 * The claim cursors' statements (see docs/claim-cursors.md):
 *
 * - **seek claim**: per priority level given as arrays (unnest, no recursive level discovery), the first
 *   `limit` unlocked due rows strictly after the level's position, in (scheduled_time, id) order, FOR
 *   UPDATE SKIP LOCKED; merged by effective priority with the age boost exactly like the classic claim,
 *   then the UPDATE that leases them (RUNNING). One statement per poll.
 * - **floored claim**: the seek claim whose picks come from a window read in the same statement: PENDING
 *   due rows above an id floor, in id order, on the `(id) WHERE status = 'PENDING'` index (migration
 *   0003), ordered by claim order in SQL. One statement, so a wakeup costs one round trip.
 * - **full pass**: the classic claim (src/store/claim/claim-jobs.ts) that also reports what the cursors need.
 *
 * Every statement reports the database's now() and each row's scheduled time in epoch microseconds, so
 * positions keep PostgreSQL's precision. Parameters `$1..$5` are the classic claim's (limit, node, types,
 * boost ms, now override).
 */
import { withClaimRowTypes } from "./claim-row-types.js";
import {
  claimNowSql,
  claimUpdateSql,
  candidatesSql,
  boostSql,
  sortClaimOrder,
  toClaimedJob,
  type ClaimBaseArgs,
  type ClaimedJob,
  type ClaimRow,
} from "./claim-jobs.js";
import { claimableSql } from "../jobs/lease-sql.js";
import { unkeyedSql } from "./keyed-sql.js";
import type { ClaimedPosition, Position, SeekTarget, WindowRow } from "./claim-positions.js";
import { named, type Queryable, type Tables } from "../../db/sql.js";

const now = claimNowSql;
const usOf = (expr: string) => `(extract(epoch FROM ${expr}) * 1000000)::bigint`;
const fromUs = (expr: string) => `(timestamptz 'epoch' + ${expr} * interval '1 microsecond')`;

/** The first candidate of each level, as JSON, from the CTE `from` (id, priority, scheduled_time). */
const headsSql = (from: string) => `(
      SELECT coalesce(json_agg(json_build_object('p', h.priority, 'us', h.us::text, 'id', h.id::text)), '[]'::json)
      FROM (SELECT DISTINCT ON (priority) priority, ${usOf("scheduled_time")} AS us, id
            FROM ${from} ORDER BY priority, scheduled_time, id) h)`;

const claimedPositionColumn = `, ${usOf("j.scheduled_time")}::text AS st_us`;

/**
 * The statements' final SELECT: one row per claimed job (or one row of nulls when none was claimed), the
 * `meta` CTE's columns on the first row only. Repeated on every row, the floored pass's window (up to 532
 * rows of JSON) was sent and parsed once per claimed job: under a steady stream of enqueues, where every
 * wakeup runs a floored pass that claims hundreds of jobs, the node spent its time parsing copies of it
 * (pickup p50 1.9 s at a quarter of the drain rate, against 5 ms for the classic claim).
 */
function metaOnFirstRowSql(metaColumns: readonly string[]): string {
  const cols = metaColumns.map((c) => `CASE WHEN c.meta_row IS NOT FALSE THEN m.${c} END AS ${c}`);
  return `SELECT ${cols.join(", ")}, c.*
    FROM meta m LEFT JOIN (SELECT cl.*, row_number() OVER () = 1 AS meta_row FROM claimed cl) c ON true`;
}

/** What the floored pass adds to the seek claim's statement (see {@link seekMergeSql}). */
interface SeekMergeParts {
  /** CTEs placed before the seek's, each followed by a comma. */
  prelude: string;
  /** The bigint[] expression of the ids the `picks` CTE locks by equality. */
  pickIds: string;
  /** Extra columns of the meta row, each `, expr AS name`. */
  meta: string;
  /** The names of those columns. */
  metaColumns: readonly string[];
}

/**
 * The seek claim's text, shared by the seek and the floored pass so their seeks, merge and claim cannot
 * drift apart: per level the seek from its position, the picks locked by id with PENDING and unleased
 * rechecked (the lock's recheck drops rows a peer claimed since the statement's snapshot), the merge by effective
 * priority, the UPDATE, and the meta row.
 */
function seekMergeSql(t: Tables, withPayload: boolean, x: SeekMergeParts): string {
  return `
    WITH ${x.prelude}levels AS (
      SELECT l.p, ${fromUs("l.us")} AS st, l.id
      FROM unnest($6::int[], $7::bigint[], $8::bigint[]) AS l(p, us, id)
    ),
    seek AS (
      SELECT c.id, c.priority, c.scheduled_time
      FROM levels
      CROSS JOIN LATERAL (
        SELECT j.id, j.priority, j.scheduled_time FROM ${t.jobs} j
        WHERE ${claimableSql("j")} AND ${unkeyedSql("j")} AND j.priority = levels.p
          AND (j.scheduled_time, j.id) > (levels.st, levels.id)
          AND j.scheduled_time <= ${now} AND j.type = ANY($3::text[])
        ORDER BY j.scheduled_time, j.id
        LIMIT $1
        FOR UPDATE SKIP LOCKED
      ) c
    ),
    picks AS (
      SELECT j.id, j.priority, j.scheduled_time FROM ${t.jobs} j
      WHERE j.id = ANY(${x.pickIds}) AND ${claimableSql("j")} AND ${unkeyedSql("j")}
        AND j.scheduled_time <= ${now} AND j.type = ANY($3::text[])
      FOR UPDATE SKIP LOCKED
    ),
    candidates AS (
      SELECT u.id, u.scheduled_time, u.priority + ${boostSql(now, "u")} AS effective
      FROM (SELECT id, priority, scheduled_time FROM seek UNION SELECT id, priority, scheduled_time FROM picks) u
    ),
    picked AS (
      SELECT id FROM candidates ORDER BY effective DESC, scheduled_time, id LIMIT $1
    ),
    claimed AS (${claimUpdateSql(t, now, withPayload, claimedPositionColumn)}
    ),
    meta AS (
      SELECT ${usOf(now)}::text AS now_us, ${headsSql("seek")} AS heads${x.meta}
    )
    ${metaOnFirstRowSql(["now_us", "heads", ...x.metaColumns])}`;
}

/**
 * The seek claim. Parameters: `$1` limit, `$2` node, `$3` types, `$4` boost ms, `$5` now override,
 * `$6` levels int[], `$7` their positions' times (epoch µs) bigint[], `$8` their positions' ids bigint[].
 * Returns one row per claimed job, or one row of nulls when nothing was claimed, each with `now_us` and
 * `heads` (the first seek candidate of every level that had one).
 */
export function seekClaimSql(t: Tables, withPayload: boolean): string {
  // No picks: only the floored pass locks rows by id (its window's best).
  return seekMergeSql(t, withPayload, { prelude: "", pickIds: "'{}'::bigint[]", meta: "", metaColumns: [] });
}

/** How many of the newest rows above the id floor the floored pass's window reads besides the oldest. */
export const newestWindowRows = 32;

/**
 * The floored pass in one statement (one round trip on the wakeup path). The CTE `win` reads up to `$10`
 * PENDING due rows of the types with id above `$9`, in id order, and the newest {@link newestWindowRows}: a range scan on the `(id) WHERE status =
 * 'PENDING'` index that takes no locks and never touches the priority index. `win_picks` orders the window
 * in claim order (effective priority with the age boost, then scheduled time, then id; the model is
 * `pickWindow`) and keeps the best `$1`; they are the seek claim's picks. `$1..$8` are the seek claim's.
 * Returns what {@link seekClaimSql} returns plus `window_rows`: every window row read (`id`, `p`, `us`),
 * in id order, since the cursors learn levels and ids from rows the claim did not take.
 */
export function flooredClaimSql(t: Tables, withPayload: boolean): string {
  // The window is the oldest \$10 rows above the floor plus the newest ${newestWindowRows}: a job enqueued
  // with a wakeup is the newest row, so a higher priority arriving behind a backlog of more than a window
  // is picked at the next floored pass rather than at the next full pass (issue 27, item 4).
  const where = `${claimableSql("j")} AND ${unkeyedSql("j")} AND j.id > $9::bigint
        AND j.scheduled_time <= ${now} AND j.type = ANY($3::text[])`;
  const prelude = `win AS (
      (SELECT j.id, j.priority, j.scheduled_time FROM ${t.jobs} j WHERE ${where} ORDER BY j.id LIMIT $10)
      UNION
      (SELECT j.id, j.priority, j.scheduled_time FROM ${t.jobs} j WHERE ${where}
       ORDER BY j.id DESC LIMIT ${newestWindowRows})
    ),
    win_picks AS (
      SELECT w.id FROM win w
      ORDER BY w.priority + ${boostSql(now, "w")} DESC, w.scheduled_time, w.id
      LIMIT $1
    ),
    `;
  const windowRows = `(
      SELECT coalesce(json_agg(json_build_object('id', w.id::text, 'p', w.priority,
                                                 'us', ${usOf("w.scheduled_time")}::text) ORDER BY w.id), '[]'::json)
      FROM win w)`;
  return seekMergeSql(t, withPayload, {
    prelude,
    pickIds: "ARRAY(SELECT id FROM win_picks)",
    meta: `, ${windowRows} AS window_rows`,
    metaColumns: ["window_rows"],
  });
}

/**
 * The full pass: the classic claim (recursive level discovery, per level a scan from the start) that also
 * returns `now_us`, `heads` (the first candidate of every level), `levels` (every level with PENDING rows)
 * and `high_id` (the table's max(id), a backward step on the primary key). Parameters as the classic claim.
 */
export function fullPassSql(t: Tables, withPayload: boolean): string {
  return `${candidatesSql(t, now)},
    claimed AS (${claimUpdateSql(t, now, withPayload, claimedPositionColumn)}
    ),
    meta AS (
      SELECT ${usOf(now)}::text AS now_us, ${headsSql("candidates")} AS heads,
             (SELECT coalesce(array_agg(p), '{}') FROM levels WHERE p IS NOT NULL) AS levels,
             (SELECT max(id) FROM ${t.jobs})::text AS high_id
    )
    ${metaOnFirstRowSql(["now_us", "heads", "levels", "high_id"])}`;
}

type Stmt = ReturnType<typeof named>;
interface Statements {
  seekFull: Stmt;
  seekLight: Stmt;
  fullFull: Stmt;
  fullLight: Stmt;
  flooredFull: Stmt;
  flooredLight: Stmt;
}
const cache = new WeakMap<Tables, Statements>();

function statements(t: Tables): Statements {
  let s = cache.get(t);
  if (!s) {
    s = {
      seekFull: named(t, "cursor_seek_full", seekClaimSql(t, true)),
      seekLight: named(t, "cursor_seek_light", seekClaimSql(t, false)),
      fullFull: named(t, "cursor_full_full", fullPassSql(t, true)),
      fullLight: named(t, "cursor_full_light", fullPassSql(t, false)),
      flooredFull: named(t, "cursor_floored_full", flooredClaimSql(t, true)),
      flooredLight: named(t, "cursor_floored_light", flooredClaimSql(t, false)),
    };
    cache.set(t, s);
  }
  return s;
}

/** The common arguments of the cursor claim statements: the classic claim's, without a queue. */
export type CursorClaimArgs = ClaimBaseArgs;

/** A claim statement's result: the jobs in claim order, their positions, and what the cursors need. */
export interface CursorClaimResult {
  jobs: ClaimedJob[];
  positions: ClaimedPosition[];
  heads: Map<number, Position>;
  nowUs: bigint;
}

/** A full pass's result. */
export interface FullPassResult extends CursorClaimResult {
  highId: bigint | null;
  levels: number[];
}

type MetaRow = Partial<ClaimRow> & {
  now_us: string;
  heads: { p: number; us: string; id: string }[];
  st_us: string | null;
  levels?: number[];
  high_id?: string | null;
  window_rows?: { id: string; p: number; us: string }[];
};

/** The row that carries the meta columns (see {@link metaOnFirstRowSql}). */
const metaRow = (rows: MetaRow[]): MetaRow | undefined => rows.find((r) => r.now_us != null);

function readResult(rows: MetaRow[], withPayload: boolean): CursorClaimResult {
  const first = metaRow(rows);
  if (!first) throw new Error("pawl: a cursor claim statement returned no meta row");
  const heads = new Map<number, Position>(
    first.heads.map((h) => [h.p, { us: BigInt(h.us), id: BigInt(h.id) }]),
  );
  const claimedRows = rows.filter((r) => r.id != null) as (ClaimRow & MetaRow)[];
  return {
    jobs: sortClaimOrder(claimedRows.map((r) => toClaimedJob(r, withPayload))),
    positions: claimedRows.map((r) => ({
      priority: r.priority,
      pos: { us: BigInt(r.st_us ?? "0"), id: BigInt(r.id) },
    })),
    heads,
    nowUs: BigInt(first.now_us),
  };
}

/** `$1..$5`, the classic claim's parameters, shared by every cursor statement. */
const claimValues = (a: CursorClaimArgs): unknown[] => [
  a.limit,
  a.nodeId,
  a.types,
  a.boostIntervalMs,
  a.now ?? null,
];

/** `$6..$8`: the seek targets as parallel arrays (levels, positions' times in µs, positions' ids). */
const targetValues = (targets: readonly SeekTarget[]): unknown[] => [
  targets.map((x) => x.priority),
  targets.map((x) => x.after.us.toString()),
  targets.map((x) => x.after.id.toString()),
];

/** Runs the seek claim for `targets`. One statement. */
export async function seekClaim(
  db: Queryable,
  t: Tables,
  args: CursorClaimArgs,
  targets: readonly SeekTarget[],
): Promise<CursorClaimResult> {
  const s = statements(t);
  const res = await db.query<MetaRow>(
    withClaimRowTypes(
      (args.withPayload ? s.seekFull : s.seekLight)([...claimValues(args), ...targetValues(targets)]),
    ),
  );
  return readResult(res.rows, args.withPayload);
}

/** Runs the full pass (the classic claim, with what the cursors need). One statement. */
export async function fullPassClaim(
  db: Queryable,
  t: Tables,
  args: CursorClaimArgs,
): Promise<FullPassResult> {
  const s = statements(t);
  const res = await db.query<MetaRow>(
    withClaimRowTypes((args.withPayload ? s.fullFull : s.fullLight)(claimValues(args))),
  );
  const base = readResult(res.rows, args.withPayload);
  const first = metaRow(res.rows);
  return {
    ...base,
    highId: first?.high_id != null ? BigInt(first.high_id) : null,
    levels: first?.levels ?? [],
  };
}

/** A floored pass's result: the claim's, plus the window it read (id order). */
export interface FlooredResult extends CursorClaimResult {
  window: WindowRow[];
}

/**
 * Runs the floored pass: reads up to `windowSize` PENDING due rows above `floorId`, picks the best of them
 * in claim order, and claims them merged with the seeks of `targets`. One statement.
 */
export async function flooredClaim(
  db: Queryable,
  t: Tables,
  args: CursorClaimArgs,
  targets: readonly SeekTarget[],
  floorId: bigint,
  windowSize: number,
): Promise<FlooredResult> {
  const s = statements(t);
  const res = await db.query<MetaRow>(
    withClaimRowTypes(
      (args.withPayload ? s.flooredFull : s.flooredLight)([
        ...claimValues(args),
        ...targetValues(targets),
        floorId.toString(),
        windowSize,
      ]),
    ),
  );
  const rows = metaRow(res.rows)?.window_rows ?? [];
  return {
    ...readResult(res.rows, args.withPayload),
    window: rows.map((r) => ({ id: BigInt(r.id), priority: r.p, us: BigInt(r.us) })),
  };
}
