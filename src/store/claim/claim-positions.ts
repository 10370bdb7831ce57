/**
 * Positions in the claim order, and what a claim statement is given and reports back in them: the
 * vocabulary the cursors' bookkeeping (./claim-cursor-state.ts) and their statements (./claim-cursor-sql.ts)
 * share. Its own file so the statements need not import the bookkeeping to speak of a position, and the
 * bookkeeping holds only its rules.
 */
/** A place in one priority level's claim order: `(scheduled_time, id)`, the time in epoch microseconds. */
export interface Position {
  /** scheduled_time in microseconds since the epoch. */
  us: bigint;
  /** The job id. */
  id: bigint;
}

/** Orders positions as the claim index does inside one level: scheduled time, then id. */
export function comparePositions(a: Position, b: Position): number {
  if (a.us !== b.us) return a.us < b.us ? -1 : 1;
  return a.id === b.id ? 0 : a.id < b.id ? -1 : 1;
}

/** The lower of two positions (a seek from it sees everything either would). */
export function minPosition(a: Position, b: Position): Position {
  return comparePositions(a, b) <= 0 ? a : b;
}

/** The position just before `p`: a seek `> before(p)` starts with the row at `p` (ids are integers). */
export function positionBefore(p: Position): Position {
  return { us: p.us, id: p.id - 1n };
}

/** Epoch microseconds as ISO-8601 text with all six fractional digits (`2026-01-01T12:00:00.123456Z`). */
export function usToIso(us: bigint): string {
  const ms = us / 1000n - (us % 1000n < 0n ? 1n : 0n);
  const iso = new Date(Number(ms)).toISOString(); // ...:ss.mmmZ
  const micros = ((us % 1000n) + 1000n) % 1000n;
  return `${iso.slice(0, -1)}${micros.toString().padStart(3, "0")}Z`;
}

/** One level's seek in a claim statement: rows of `priority` strictly after `after`. */
export interface SeekTarget {
  priority: number;
  after: Position;
}

/** A row of the floored pass's window: PENDING and due, above the id floor. */
export interface WindowRow {
  id: bigint;
  priority: number;
  us: bigint;
}

/** A claimed row's level and position. */
export interface ClaimedPosition {
  priority: number;
  pos: Position;
}

/** What a claim statement reports back, whatever the pass. */
export interface PassOutcome {
  /** The rows it claimed. */
  claimed: readonly ClaimedPosition[];
  /** Per level that had candidates in the statement's seeks (or the full pass's scans): the first one. */
  heads: ReadonlyMap<number, Position>;
  /** The limit the statement was given. */
  limit: number;
  /** The database's now() for the statement, in epoch microseconds. */
  nowUs: bigint;
}

/** What only a full pass reports. */
export interface FullOutcome extends PassOutcome {
  /** The table's highest id at the pass (null when the table is empty). */
  highId: bigint | null;
  /** Every priority level that had PENDING rows (due or not). */
  levels: readonly number[];
}
