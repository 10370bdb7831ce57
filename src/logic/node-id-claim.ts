/**
 * Whether a node may take over its node id at start(), judged from the row the id already has and from
 * the node id's session lock (db/session-lock.ts). Two live processes under one id would each rescue the
 * other's jobs as "left by a previous run", so a start that cannot be sure the previous run is gone waits
 * for its heartbeat to go stale, and refuses as soon as that heartbeat moves.
 *
 * The lock is what makes a restart after kill -9 immediate: PostgreSQL ends a dead process's session, and
 * with it the lock, as soon as the socket closes. Host and pid cannot say it: two containers may both be
 * pid 1 on the same host name, and a pid of another pid namespace looks dead from this one.
 */

/** The row a node id already has, as read at start(). */
export interface PreviousRunFacts {
  /** The row's `node_info.instance`. */
  instance: string;
  /** The sweep declared it dead. */
  declaredDead: boolean;
  /** Database time since its last heartbeat, ms. */
  ageMs: number;
  /** Its `node_info.idLock`: that run held the node id's session lock (absent on 0.2.0 and older rows). */
  heldIdLock: boolean;
  /**
   * Its heartbeat moved since this start first read the row: a process beats under this id right now.
   */
  beatSinceFirstRead: boolean;
}

/** What this start knows of the node id's session lock. */
export type IdLockState =
  /** This start holds it: no other session does. */
  | "acquired"
  /** Another session holds it. */
  | "busy"
  /** This start cannot take it (behind a transaction pooler, embedded database, or the lock's connection failed). */
  | "unavailable";

/** The verdict: take the id over, wait and look again, or refuse (a live process runs under it). */
export type PreviousRunVerdict = "proceed" | "wait" | "refuse";

/**
 * The verdict on a node id's existing row for a start whose own run is `selfInstance`.
 *
 * @example
 * ```ts
 * previousRunVerdict(null, "acquired", "i2", 30_000); // "proceed": no previous run
 * previousRunVerdict({ instance: "i1", declaredDead: false, ageMs: 200, heldIdLock: true, beatSinceFirstRead: false },
 *   "acquired", "i2", 30_000); // "proceed": the lock is free, so that run's session has ended
 * ```
 */
export function previousRunVerdict(
  row: PreviousRunFacts | null,
  lock: IdLockState,
  selfInstance: string,
  deadNodeThresholdMs: number,
): PreviousRunVerdict {
  if (row === null || row.instance === selfInstance || row.declaredDead) return "proceed";
  // Stale by the cluster's own rule: every other node's sweep would call it dead now too.
  if (row.ageMs >= deadNodeThresholdMs) return "proceed";
  if (row.beatSinceFirstRead) return "refuse";
  // That run held the lock for as long as its session lived; the lock being free means the session ended.
  if (row.heldIdLock && lock === "acquired") return "proceed";
  // The lock is held (a live process, or a dead host's connection the server has not yet dropped), or the
  // row is from a run that took none: only the heartbeat can tell.
  return "wait";
}
